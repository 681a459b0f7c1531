/**
 * The host's own check of a reduced-precision graph before `auto` takes it (precision.ts): both
 * graphs run the same crop of a bundled photo in turns, on the threads jobs get; the variant's
 * median time over float32's and its PSNR against float32's output (rounded and clamped, as
 * delivered) come back. Int8 kernels differ between CPUs (with and without VNNI), so a gate
 * measured on one machine is confirmed on the one that will run the jobs. Taken once, at start.
 */
import ort from 'onnxruntime-node';
import sharp from 'sharp';
import { DEFAULT_SAMPLE_IMAGE } from '../paths.js';
import { sessionOptions } from './session.js';
import type { PrecisionProbe } from './precision.js';

const SIDE = 64;
const ROUNDS = 3;

/**
 * The centre of the bundled astronaut photo (0..255 RGB, NCHW): a real picture, because int8
 * error depends on what the activations look like, and the photo whose gate figure is the lowest.
 */
export async function probeInput(side: number = SIDE): Promise<Float32Array> {
  const photo = sharp(DEFAULT_SAMPLE_IMAGE);
  const { width = side, height = side } = await photo.metadata();
  const { data } = await photo
    .extract({ left: Math.floor((width - side) / 2), top: Math.floor((height - side) / 2), width: side, height: side })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  const planes = new Float32Array(3 * side * side);
  for (let i = 0; i < side * side; i += 1) {
    for (let c = 0; c < 3; c += 1) planes[c * side * side + i] = data[i * 3 + c] as number;
  }
  return planes;
}

/** PSNR (dB) of two outputs as delivered: clamped to 0..255 and rounded; 99 when identical. */
export function deliveredPsnr(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i += 1) {
    const d =
      Math.round(Math.min(255, Math.max(0, a[i] as number))) - Math.round(Math.min(255, Math.max(0, b[i] as number)));
    sum += d * d;
  }
  return sum === 0 ? 99 : 10 * Math.log10((255 * 255) / (sum / a.length));
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Runs the float32 file and the variant's file (paths, verified by the caller) and compares them. */
export async function probeVariant(float32Path: string, variantPath: string, threads: number): Promise<PrecisionProbe> {
  // The options jobs' sessions get (no spinning, the same threads), so the probe times what jobs will run.
  const options = sessionOptions(['cpu'], threads);
  const sessions = await Promise.all([
    ort.InferenceSession.create(float32Path, options),
    ort.InferenceSession.create(variantPath, options),
  ]);
  try {
    const feeds = {
      [sessions[0].inputNames[0] as string]: new ort.Tensor('float32', await probeInput(), [1, 3, SIDE, SIDE]),
    };
    const outputs: Float32Array[] = [];
    const times: [number[], number[]] = [[], []];
    // One untimed run each (allocations, pre-packing), then the timed rounds in turns.
    for (let round = 0; round <= ROUNDS; round += 1) {
      for (const [i, session] of sessions.entries()) {
        const started = performance.now();
        const result = await session.run(feeds);
        if (round > 0) times[i]?.push(performance.now() - started);
        else outputs[i] = result[session.outputNames[0] as string]?.data as Float32Array;
      }
    }
    return {
      speedVsFloat32: median(times[0]) / median(times[1]),
      psnrDb: deliveredPsnr(outputs[1] as Float32Array, outputs[0] as Float32Array),
    };
  } finally {
    await Promise.all(sessions.map((s) => s.release()));
  }
}
