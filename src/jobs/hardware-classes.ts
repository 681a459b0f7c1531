/**
 * Throughput of each hardware class the cost model knows, in the units it multiplies by. The CPU
 * figures are measured on the development machine (bench/gateway/calibrate-cost-model.ts, recorded in
 * docs/benchmarks.md, "Cost model calibration"); the GPU figures are ESTIMATES from published peak
 * throughput and a stated efficiency, to be replaced by measurements on such a host.
 *
 * CPU work (ONNX Runtime on the CPU, ffmpeg decode, x264 encode) scales with the cores the worker
 * has, so CPU figures are per core and `hardwareProfile` multiplies them by the core count.
 */

export const HARDWARE_CLASS_NAMES = ['cpu', 'h100'] as const;
export type HardwareClassName = (typeof HARDWARE_CLASS_NAMES)[number];

export interface HardwareClass {
  description: string;
  /** `measured` on a machine of this class, or `estimate` from published figures. */
  basis: 'measured' | 'estimate';
  /**
   * Multiply-adds per second that the super-resolution networks achieve (manifest MACs per input
   * pixel x tiled input pixels, over wall time): per core on CPU classes, whole device otherwise.
   */
  networkMacsPerSecond: number;
  networkPerCore: boolean;
  /** Seconds of one core to decode one megapixel of H.264 to raw RGB (ffmpeg). */
  decodeCoreSecondsPerMegapixel: number;
  /** Seconds of one core to encode one megapixel with libx264 (veryfast, crf 18: the default encoder). */
  encodeCoreSecondsPerMegapixel: number;
  /** Seconds of one core per output megapixel of image decode and encode around the network (sharp). */
  imageCodecCoreSecondsPerMegapixel: number;
  /** Network and codecs overlap (network on a GPU, codecs on the CPU) instead of sharing the cores. */
  overlapsCodecs: boolean;
  /** Fixed cost of one job: sessions already open, ffmpeg start, probe of the result. */
  setupSeconds: number;
}

/**
 * The table. CPU: `docs/benchmarks.md` "Cost model calibration" (2-core AMD EPYC, shared). H100
 * (SXM): the SR networks run in FP32 through ONNX Runtime's CUDA provider, whose convolutions use
 * TF32 tensor cores: 495 TFLOP/s dense peak, 247 TMAC/s. Small 3x3 convolutions at 32-64 channels
 * with tiles of 512 px reach a few per cent of a peak like that: 5 %, 12 TMAC/s, is the estimate.
 * Its host: the CPU's per-core codec figures (x264 runs on the host: the H100 has no NVENC). A
 * kind's own per-class figures are its own, keyed by these class names (the kind's cost module).
 */
export const HARDWARE_CLASSES: Readonly<Record<HardwareClassName, HardwareClass>> = {
  cpu: {
    description: 'ONNX Runtime on the CPU, libx264 on the same cores (measured on a 2-core AMD EPYC)',
    basis: 'measured',
    networkMacsPerSecond: 40e9,
    networkPerCore: true,
    decodeCoreSecondsPerMegapixel: 0.008,
    encodeCoreSecondsPerMegapixel: 0.025,
    imageCodecCoreSecondsPerMegapixel: 0.03,
    overlapsCodecs: false,
    setupSeconds: 0.2,
  },
  h100: {
    description:
      'NVIDIA H100 (CUDA execution provider), libx264 on the host CPU: ESTIMATE from published peak throughput',
    basis: 'estimate',
    networkMacsPerSecond: 12e12,
    networkPerCore: false,
    decodeCoreSecondsPerMegapixel: 0.008,
    encodeCoreSecondsPerMegapixel: 0.025,
    imageCodecCoreSecondsPerMegapixel: 0.03,
    overlapsCodecs: true,
    setupSeconds: 2,
  },
};

/** A hardware class on a host with `cores` cores for the worker: what the cost model multiplies by. */
export interface HardwareProfile {
  name: HardwareClassName;
  basis: HardwareClass['basis'];
  cores: number;
  networkMacsPerSecond: number;
  decodeSecondsPerMegapixel: number;
  encodeSecondsPerMegapixel: number;
  imageCodecSecondsPerMegapixel: number;
  overlapsCodecs: boolean;
  setupSeconds: number;
}

export function hardwareProfile(
  name: HardwareClassName,
  cores: number,
  table: Readonly<Record<HardwareClassName, HardwareClass>> = HARDWARE_CLASSES,
): HardwareProfile {
  if (!Number.isInteger(cores) || cores < 1)
    throw new RangeError(`Expected cores to be a positive integer but received ${String(cores)}`);
  const c = table[name];
  return {
    name,
    basis: c.basis,
    cores,
    networkMacsPerSecond: c.networkPerCore ? c.networkMacsPerSecond * cores : c.networkMacsPerSecond,
    decodeSecondsPerMegapixel: c.decodeCoreSecondsPerMegapixel / cores,
    encodeSecondsPerMegapixel: c.encodeCoreSecondsPerMegapixel / cores,
    imageCodecSecondsPerMegapixel: c.imageCodecCoreSecondsPerMegapixel / cores,
    overlapsCodecs: c.overlapsCodecs,
    setupSeconds: c.setupSeconds,
  };
}

/**
 * The class a worker runs as when the setting says `auto`: the first execution provider decides
 * (cuda or tensorrt: a GPU host, which this project targets as H100; cpu or webgpu: cpu).
 */
export function hardwareClassForProviders(providers: readonly string[]): HardwareClassName {
  const first = providers[0];
  return first === 'cuda' || first === 'tensorrt' ? 'h100' : 'cpu';
}
