/**
 * Which graph of a super-resolution network runs (WORKER_PRECISION): float32, its float16 variant
 * on a GPU, or its int8 variant (a CPU host, or TensorRT). Pure: the settings, the provider that
 * passed the start-up probe and the manifests go in; the choice, or the reason it is refused, comes
 * out. `auto` takes a reduced graph only where its quality gate (the manifest's `gate`) passes and
 * the host's own probe (app/precision.ts) found it faster at the same quality.
 */
import type { PrecisionGate, SuperResolutionManifest } from './manifest.js';

export const PRECISION_SETTINGS = ['auto', 'fp32', 'fp16', 'int8', 'bf16'] as const;
export type PrecisionSetting = (typeof PRECISION_SETTINGS)[number];
/** The graphs that exist: bf16 is a setting only, refused until a bf16 graph runs faster somewhere. */
export type GraphPrecision = 'fp32' | 'fp16' | 'int8';

/** The PSNR floor (dB, against float32) a reduced graph must hold on the host's own probe too. */
export const PRECISION_PSNR_FLOOR_DB = 40;

/** Providers that run the float16 graphs natively (WebGPU needs an adapter feature it may not have). */
const HALF_PRECISION_PROVIDERS: readonly string[] = ['cuda', 'tensorrt'];
/** Whether the super-resolution networks run their float16 graphs: the loader's question and the report's. */
export function runsFloat16(setting: PrecisionSetting, provider: string): boolean {
  return HALF_PRECISION_PROVIDERS.includes(provider) && (setting === 'auto' || setting === 'fp16');
}

/** Largest difference, in 1/255 steps, between a tiled and an untiled result: seamless. */
export const SEAMLESS_LEVELS = 1;

/** Why `setting` cannot run on `provider` (the one that passed the probe), or null when it can. */
export function precisionRefusal(setting: PrecisionSetting, provider: string): string | null {
  if (setting === 'bf16') {
    return 'WORKER_PRECISION=bf16: no bf16 graph is shipped, because ONNX Runtime has no bf16 convolution on the CPU provider (docs/benchmarks.md, "Reduced precision on the CPU"); use auto, fp32 or int8';
  }
  if (setting === 'fp16' && !HALF_PRECISION_PROVIDERS.includes(provider)) {
    return `WORKER_PRECISION=fp16 needs the cuda or tensorrt execution provider, but the start-up probe found ${provider}; use auto, fp32 or int8`;
  }
  if (setting === 'int8' && provider !== 'cpu' && provider !== 'tensorrt') {
    return `WORKER_PRECISION=int8 on a GPU needs the TensorRT execution provider (MEDIA_WORKER_EXECUTION_PROVIDERS=tensorrt,cuda), but the start-up probe found ${provider}: the CUDA provider runs int8 graphs through float32 convolutions; use auto, fp16 or fp32`;
  }
  return null;
}

/** What the host measured for a reduced graph against its float32 network (app/precision.ts). */
export interface PrecisionProbe {
  speedVsFloat32: number;
  psnrDb: number;
}

/** One network's choice, with the reason a person reads in the log and capabilities. */
export interface NetworkPrecision {
  network: string;
  /** The manifest that runs. */
  graph: string;
  precision: GraphPrecision;
  reason: string;
}

function gateLine(gate: PrecisionGate | undefined): string {
  if (gate === undefined) return 'no quality gate measured';
  return `gate ${gate.passes ? 'passes' : 'fails'}: lowest PSNR ${gate.psnrMinDb.toFixed(1)} dB (floor ${PRECISION_PSNR_FLOOR_DB}), colour ${gate.colourDeltaE.toFixed(2)} (tolerance ${gate.colourToleranceDeltaE.toFixed(2)})`;
}

/**
 * The graph one network runs with. `variant`: its int8 manifest, if any. `probe`: the host's own
 * measurement of that variant, taken only for `auto` when its gate passes.
 */
export function choosePrecision(
  setting: Exclude<PrecisionSetting, 'bf16'>,
  provider: string,
  base: SuperResolutionManifest,
  variant: SuperResolutionManifest | undefined,
  probe?: PrecisionProbe,
): NetworkPrecision {
  const float32 = (reason: string): NetworkPrecision => ({
    network: base.name,
    graph: base.name,
    precision: 'fp32',
    reason,
  });
  if (setting === 'fp32') return float32('WORKER_PRECISION=fp32');
  if (setting === 'fp16' || runsFloat16(setting, provider)) {
    return base.halfPrecision === undefined
      ? float32('no float16 variant')
      : {
          network: base.name,
          graph: base.halfPrecision,
          precision: 'fp16',
          reason: setting === 'auto' ? `auto: ${provider} runs float16` : 'WORKER_PRECISION=fp16',
        };
  }
  if (variant === undefined) return float32(`no int8 variant${setting === 'int8' ? ' (WORKER_PRECISION=int8)' : ''}`);
  const int8 = (reason: string): NetworkPrecision => ({
    network: base.name,
    graph: variant.name,
    precision: 'int8',
    reason,
  });
  // Seams are never a trade-off: a variant whose tiles do not meet within 1/255 does not run, even when asked for.
  if (variant.gate !== undefined && variant.gate.tiledMaxDiff > SEAMLESS_LEVELS) {
    return float32(
      `int8 variant not run: its tiles differ from one whole tile by ${variant.gate.tiledMaxDiff}/255 at overlap ${variant.tile.overlap}`,
    );
  }
  if (setting === 'int8') return int8(`WORKER_PRECISION=int8 (${gateLine(variant.gate)})`);
  // auto on a CPU: the gate first (measured on the reference photos and frames), then this host.
  if (variant.gate?.passes !== true) return float32(`auto: int8 not offered, ${gateLine(variant.gate)}`);
  if (probe === undefined) return float32('auto: int8 not probed on this host');
  if (probe.psnrDb < PRECISION_PSNR_FLOOR_DB)
    return float32(`auto: int8 gives ${probe.psnrDb.toFixed(1)} dB on this host (floor ${PRECISION_PSNR_FLOOR_DB})`);
  if (probe.speedVsFloat32 <= 1)
    return float32(`auto: int8 is not faster on this host (${probe.speedVsFloat32.toFixed(2)}x)`);
  return int8(`auto: int8 ${probe.speedVsFloat32.toFixed(2)}x float32 at ${probe.psnrDb.toFixed(1)} dB on this host`);
}
