/**
 * The pure parts of the engines benchmark (engines.ts), apart so that tests import them without
 * starting the benchmark: the CPU's flags, the rounds' order, agreement, which network a variant
 * file goes with, the table's rows and ratios, and pip's arguments for the bench's Python.
 */
import path from 'node:path';
import { median } from '../common.js';

/** Input side per network when --size is not given: a few seconds a run on 2 cores. */
export const DEFAULT_SIZES: Readonly<Record<string, number>> = { 'realesrgan-x4plus': 64, 'realesrgan-x4fast': 256 };
/** Suffixes of the reduced-precision manifests looked for beside each network. */
export const VARIANT_SUFFIXES = ['int8', 'bf16'] as const;
/** The /proc/cpuinfo flags that decide what int8/bf16 kernels a CPU has. */
export const RELEVANT_FLAGS = [
  'avx2',
  'fma',
  'avx512f',
  'avx512bw',
  'avx512vl',
  'avx512_vnni',
  'avx_vnni',
  'avx512_bf16',
  'avx512_fp16',
  'amx_tile',
  'amx_int8',
  'amx_bf16',
] as const;

/** Local package indexes used when present (machines without PyPI); otherwise pip's own index. */
export const LOCAL_INDEXES = ['/opt/pypi/simple', '/opt/pypi-more/simple'];
/** A folder of wheels searched for a CPU build of torch (the index's torch may be a CUDA build). */
export const LOCAL_WHEELS = '/opt/wheels';

export const TABLE_HEADER = [
  'network',
  'input',
  'engine',
  'runs',
  'median s',
  'min s',
  'speed-up vs PyTorch fp32, median',
  'speed-up vs PyTorch fp32, min',
  'speed-up vs ours fp32, median',
  'speed-up vs ours fp32, min',
  'PSNR vs ours fp32 dB',
] as const;

/** The model name and the relevant flags of /proc/cpuinfo's first processor. */
export function cpuFlags(cpuinfo: string): { model: string; present: string[]; absent: string[] } {
  const field = (name: string): string | undefined =>
    cpuinfo
      .split('\n')
      .find((l) => l.split(':')[0]?.trim() === name)
      ?.split(':')
      .slice(1)
      .join(':')
      .trim();
  const flags = new Set((field('flags') ?? '').split(/\s+/));
  return {
    model: field('model name') ?? 'unknown',
    present: RELEVANT_FLAGS.filter((f) => flags.has(f)),
    absent: RELEVANT_FLAGS.filter((f) => !flags.has(f)),
  };
}

/** `names` rotated by `round`: each engine goes first in turn. */
export function roundOrder<T>(names: readonly T[], round: number): T[] {
  if (names.length === 0) return [];
  const k = ((round % names.length) + names.length) % names.length;
  return [...names.slice(k), ...names.slice(0, k)];
}

/** PSNR of two 0..255 float images, each clamped to 0..255 first; Infinity when equal. */
export function psnrClamped(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length)
    throw new RangeError(`Expected outputs of equal size but received ${a.length} and ${b.length} values`);
  const clamp = (v: number): number => Math.min(255, Math.max(0, v));
  let se = 0;
  for (let i = 0; i < a.length; i += 1) {
    const d = clamp(a[i]!) - clamp(b[i]!);
    se += d * d;
  }
  return se === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10((255 * 255) / (se / a.length));
}

/** Which network a --variant file goes with: the one its file name names, or the only one. */
export function assignVariants(files: readonly string[], networks: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>(networks.map((n) => [n, []]));
  for (const file of files) {
    const base = path.basename(file);
    const named = networks.filter((n) => base.includes(n) || base.includes(n.replace(/^realesrgan-/, '')));
    const network = named.length === 1 ? named[0] : networks.length === 1 ? networks[0] : undefined;
    if (network === undefined) {
      throw new RangeError(
        `Expected --variant ${file} to name one of ${networks.join(', ')} in its file name (or one --model)`,
      );
    }
    out.get(network)!.push(file);
  }
  return out;
}

/** A short label for an engine id and file name: letters, digits, dots, dashes. */
export function variantLabel(file: string): string {
  return path.basename(file, '.onnx').replace(/[^\w.-]+/g, '-');
}

export interface EngineResult {
  /** What the table calls it. */
  engine: string;
  /** Seconds of each timed run; absent when the engine did not run. */
  runs?: readonly number[];
  /** Why it did not run ("not prepared", a missing package). */
  note?: string;
  /** PSNR of its output against ours fp32 (Infinity: identical); absent when not compared. */
  psnr?: number;
}

function ratio(reference: number | undefined, value: number | undefined): string {
  return reference === undefined || value === undefined || !(value > 0) ? '' : (reference / value).toFixed(2);
}

/**
 * The table's rows for one network: median and min per engine, speed-ups (reference seconds over
 * this engine's) against the engines named `pytorch` and `ours`, and the agreement.
 */
export function engineRows(
  network: string,
  input: string,
  results: readonly EngineResult[],
  pytorch: string,
  ours: string,
): string[][] {
  const stats = (r: EngineResult | undefined): { median: number; min: number } | undefined =>
    r?.runs === undefined || r.runs.length === 0 ? undefined : { median: median(r.runs), min: Math.min(...r.runs) };
  const torch = stats(results.find((r) => r.engine === pytorch));
  const base = stats(results.find((r) => r.engine === ours));
  return results.map((r) => {
    const s = stats(r);
    if (s === undefined) return [network, input, r.engine, '0', r.note ?? 'not run', '', '', '', '', '', ''];
    const agreement =
      r.engine === ours
        ? 'reference'
        : r.psnr === undefined
          ? ''
          : Number.isFinite(r.psnr)
            ? r.psnr.toFixed(1)
            : 'identical';
    return [
      network,
      input,
      r.engine,
      String(r.runs!.length),
      s.median.toFixed(3),
      s.min.toFixed(3),
      ratio(torch?.median, s.median),
      ratio(torch?.min, s.min),
      ratio(base?.median, s.median),
      ratio(base?.min, s.min),
      agreement,
    ];
  });
}

/**
 * pip's arguments for the bench's environment: the local indexes that exist (else none: pip's
 * default), and torch pinned to a CPU wheel of `wheelsDir` when it holds one (a folder searched
 * with --find-links). `override` (BENCH_PIP_ARGS) replaces the index flags.
 */
export function pipInstallArgs(
  existing: { indexes: readonly string[]; wheels: readonly string[]; wheelsDir: string },
  override?: string,
): string[] {
  const index =
    override !== undefined && override.trim() !== ''
      ? override.trim().split(/\s+/)
      : existing.indexes.flatMap((dir, i) => [i === 0 ? '--index-url' : '--extra-index-url', `file://${dir}`]);
  const cpuTorch = existing.wheels
    .map((w) => /^torch-([^-]+\+cpu)-/.exec(w)?.[1])
    .filter((v): v is string => v !== undefined)
    .sort()
    .at(-1);
  const torch = cpuTorch === undefined ? ['torch'] : ['--find-links', existing.wheelsDir, `torch==${cpuTorch}`];
  return ['install', ...index, 'numpy', 'onnx', 'onnxruntime', ...torch];
}
