/**
 * The video layer's settings: the encoders it can drive and their defaults. No imports, so reading
 * the settings (src/config.ts) loads no media runtime; the rest of the layer is entered through
 * index.ts.
 */

export const X264_PRESETS = [
  'ultrafast',
  'superfast',
  'veryfast',
  'faster',
  'fast',
  'medium',
  'slow',
  'slower',
  'veryslow',
] as const;
export type X264Preset = (typeof X264_PRESETS)[number];

/** H.264 encoders the pipeline knows how to drive. Hardware ones are used only when present and working. */
export const VIDEO_ENCODERS = ['libx264', 'h264_nvenc', 'h264_qsv'] as const;
export type VideoEncoderName = (typeof VIDEO_ENCODERS)[number];

export interface EncoderSettings {
  codec: VideoEncoderName;
  /** Constant quality, 0 (lossless) to 51; the x264 CRF scale, mapped to each hardware encoder's own. */
  crf: number;
  /** Speed/efficiency trade-off on x264's scale, mapped to each hardware encoder's own. */
  preset: X264Preset;
  /** Encoder threads; 0 or absent lets the encoder decide. */
  threads?: number;
}

/**
 * CRF 18 is visually near-lossless for upscaled material. `veryfast` rather than x264's `medium`:
 * the CPU encoder runs beside inference (on the CPU, or on a GPU host without a hardware encoder such
 * as the H100) and must keep up with it at a small share of the CPU; at a fixed CRF the faster
 * preset mostly costs file size (some 10-20 % more bits), not visible quality. Measured on the
 * benchmark clip (320x180 output): a third less encoder CPU time than `fast`.
 */
export const DEFAULT_ENCODER: EncoderSettings = { codec: 'libx264', crf: 18, preset: 'veryfast' };

/** What happens to HDR (PQ or HLG) video: kept as 10-bit HDR, or tone-mapped to 8-bit SDR BT.709 (colour.ts). */
export const HDR_MODES = ['keep', 'sdr'] as const;
export type HdrMode = (typeof HDR_MODES)[number];
export const DEFAULT_HDR_MODE: HdrMode = 'keep';
