/**
 * The generated blocks of the benchmarks' pages (docs/benchmarks/*.md): which benchmark writes each
 * one, on which page, and the tables it holds. The benchmarks render their tables with these headers, and test/bench/doc-blocks.test.ts
 * checks every block in the document against them, so the two cannot drift apart.
 */

export interface TableSpec {
  /** The header, or its first columns when `open` (one more column per model, overlap, ...). */
  header: readonly string[];
  open?: boolean;
  /** Leading columns of labels; every other cell holds a number (or is empty, or `-`). */
  labels: number;
}

export interface BlockSpec {
  /** The benchmark that writes the block: bench/FAMILY/BENCH.ts (bench/catalog.ts). */
  bench: string;
  /** The page of docs/benchmarks/ that holds the block: its family's. */
  doc: string;
  /** The kinds of table the block may hold, in any number and order. */
  tables: readonly TableSpec[];
}

export const TABLES = {
  quality: { header: ['photo'], open: true, labels: 1 },
  flicker: { header: ['method', 'mean frame-to-frame luma change', 'flicker (over bicubic)', 'pipeline s'], labels: 1 },
  imageSpeed: {
    header: [
      'model',
      'factor',
      'tile/overlap (tiles)',
      'file ms',
      'bare ms',
      'file MP/s',
      'bare MP/s',
      'file / bare',
      'file median ms',
    ],
    labels: 2,
  },
  upscalerjs: {
    header: [
      'model',
      'factor',
      'UpscalerJS, wasm, 1 thread (ms)',
      'ours, 1 thread (ms)',
      'faster, same threads',
      'ours, one thread per core (ms)',
      'faster, defaults',
      'faster, medians (same threads / defaults)',
      'agreement dB',
    ],
    labels: 2,
  },
  imageMemory: {
    header: [
      'model',
      'factor',
      'input',
      'output',
      'output MP',
      'wall s',
      'output MP/s',
      'peak RSS MiB',
      '8-bit output MiB',
      'peak / output',
    ],
    labels: 2,
  },
  tilingSpeed: {
    header: [
      'model',
      'tile/overlap/batch',
      'tiles',
      'one untiled ORT call ms',
      'tiled pipeline ms',
      'wall ratio',
      'CPU-time ratio',
      'outside ORT ms',
      'output MP/s',
    ],
    labels: 1,
  },
  tilingOverlap: { header: ['model'], open: true, labels: 1 },
  video: { header: ['measure', 'median', 'minimum', 'goal'], labels: 1 },
  lipsyncStages: { header: ['stage', 'ms/frame'], labels: 1 },
  lipsyncRuns: {
    header: ['run', 'face pass', 'wall / network-only', 'share of wall time in the network %', 'ms/frame not hidden'],
    labels: 2,
  },
  lipsyncFraming: {
    header: [
      'source',
      'faces',
      'frontal',
      'worst frontal offset %',
      'worst frontal offset aligned %',
      'worst offset %',
      'mean mouth v',
    ],
    labels: 1,
  },
  gateway: { header: ['measure', 'count', 'per second', 'p50 ms', 'p99 ms', 'max ms'], labels: 1 },
  music: {
    header: [
      'model',
      'run',
      'songs',
      'seconds per song',
      'load s',
      'steps',
      'steps/s',
      'generate s',
      'real-time factor',
      'finish s',
      'real-time factor with finish',
    ],
    labels: 1,
  },
  costModel: {
    header: [
      'job',
      'class',
      'frames',
      'estimated s',
      'wall s',
      'wall / estimate',
      'CPU / cores s',
      'CPU / estimate',
      'load average',
    ],
    labels: 2,
  },
  realesrgan: {
    header: [
      'model',
      'photo',
      'input',
      'ours cold s',
      'ours warm s',
      'upscayl-bin s',
      'speed-up cold',
      'speed-up warm',
      'PSNR all',
      'max all',
      'PSNR sane',
      'max sane',
      'p99.9 sane',
      'left out %',
    ],
    labels: 2,
  },
  tileBudgetShare: { header: ['tile from', 'tile'], open: true, labels: 1 },
  tileBudgetTime: {
    header: ['model', 'crop', 'tile', 'computed / image pixels', 'one untiled call ms', 'tiled ms', 'tiled / untiled'],
    labels: 2,
  },
  gpu: { header: ['provider', 'step', 'input', 'wall s', 'output MP/s', 'GPU busy %', 'upscayl-bin s'], labels: 3 },
  inputMeasureCost: { header: ['read', 'ms', 'over headers only'], labels: 1 },
  damagedInputs: { header: ['input', 'quote', 'run', 'code', 'tiles run', 'wasted %'], labels: 4 },
  damagedLipsyncInputs: { header: ['input', 'quote', 'run', 'code', 'faces run', 'wasted %'], labels: 4 },
  realesrganFlops: {
    header: [
      'network',
      'multiply-adds per input pixel (M)',
      'time s',
      'GFLOP/s',
      'share of the MatMul peak %',
      'output MP/s',
    ],
    labels: 1,
  },
} as const satisfies Record<string, TableSpec>;

export const BLOCKS: Readonly<Record<string, BlockSpec>> = {
  quality: { bench: 'quality', doc: 'image-upscalerjs.md', tables: [TABLES.quality] },
  'quality-realesrgan': { bench: 'quality', doc: 'image-realesrgan.md', tables: [TABLES.quality] },
  flicker: { bench: 'flicker', doc: 'video.md', tables: [TABLES.flicker] },
  'tiling-overlap': { bench: 'tiling', doc: 'tiling.md', tables: [TABLES.tilingOverlap] },
  realesrgan: { bench: 'realesrgan', doc: 'image-realesrgan.md', tables: [TABLES.realesrgan, TABLES.realesrganFlops] },
  'realesrgan-flops': { bench: 'realesrgan', doc: 'image-realesrgan.md', tables: [TABLES.realesrganFlops] },
  'image-speed': { bench: 'image-speed', doc: 'image-upscalerjs.md', tables: [TABLES.imageSpeed] },
  upscalerjs: { bench: 'upscalerjs', doc: 'image-upscalerjs.md', tables: [TABLES.upscalerjs] },
  tiling: { bench: 'tiling', doc: 'tiling.md', tables: [TABLES.tilingSpeed] },
  'tile-budget': { bench: 'tile-budget', doc: 'tiling.md', tables: [TABLES.tileBudgetShare, TABLES.tileBudgetTime] },
  gpu: { bench: 'gpu', doc: 'gpu.md', tables: [TABLES.gpu] },
  'image-memory': { bench: 'image-memory', doc: 'tiling.md', tables: [TABLES.imageMemory] },
  video: { bench: 'video', doc: 'video.md', tables: [TABLES.video] },
  lipsync: { bench: 'lipsync', doc: 'lipsync-and-music.md', tables: [TABLES.lipsyncStages, TABLES.lipsyncRuns] },
  'lipsync-framing': { bench: 'lipsync-framing', doc: 'lipsync-and-music.md', tables: [TABLES.lipsyncFraming] },
  gateway: { bench: 'gateway', doc: 'service.md', tables: [TABLES.gateway] },
  music: { bench: 'music', doc: 'lipsync-and-music.md', tables: [TABLES.music] },
  'cost-model': { bench: 'cost-model', doc: 'cost-model.md', tables: [TABLES.costModel] },
  'input-measure': {
    bench: 'input-measure',
    doc: 'video.md',
    tables: [TABLES.inputMeasureCost, TABLES.damagedInputs, TABLES.damagedLipsyncInputs],
  },
};
