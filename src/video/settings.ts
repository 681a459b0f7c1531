/**
 * The video layer's settings: the encoders it can drive, their defaults, and what happens to HDR.
 * Pure (zod and the settings machinery only), so reading the settings (src/config.ts) loads no
 * media runtime; the rest of the layer is entered through index.ts.
 */
import { intSchema, oneOfSetting, setting } from '../settings-table.js';

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

export const VIDEO_SETTINGS = {
  videoEncoder: setting({
    env: 'MEDIA_WORKER_VIDEO_ENCODER',
    schema: oneOfSetting(VIDEO_ENCODERS),
    default: 'libx264',
    doc: 'H.264 encoder for 8-bit video results: libx264 (CPU), h264_nvenc or h264_qsv when present; an absent hardware encoder falls back to libx264 with a log line. 10-bit results (HDR, 10-bit input) always use libx265.',
  }),
  videoCrf: setting({
    env: 'MEDIA_WORKER_VIDEO_CRF',
    schema: intSchema('an integer from 0 to 51', 0, 51),
    default: String(DEFAULT_ENCODER.crf),
    doc: 'Constant quality of video results on the x264 CRF scale (0 lossless, 18 near-lossless, 23 x264 default).',
  }),
  videoPreset: setting({
    env: 'MEDIA_WORKER_VIDEO_PRESET',
    schema: oneOfSetting(X264_PRESETS),
    default: DEFAULT_ENCODER.preset,
    doc: "x264 speed preset (mapped to hardware encoders' own); the CPU encoder must keep up with inference.",
  }),
  videoHdr: setting({
    env: 'MEDIA_WORKER_VIDEO_HDR',
    schema: oneOfSetting(HDR_MODES),
    default: DEFAULT_HDR_MODE,
    doc: 'What happens to HDR (PQ or HLG) video, upscaled or lip-synced, when the job does not say (its `hdr` input): `keep` encodes 10-bit HEVC HDR with its metadata, `sdr` tone-maps to 8-bit H.264 BT.709 (docs/contract.md, "Video fidelity").',
  }),
} as const;
