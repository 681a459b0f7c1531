/**
 * The benchmarks, one line each, by family: what `media-worker bench` lists and what each
 * script's --help starts with. A benchmark is bench/FAMILY/NAME.ts, built to
 * dist/bench/FAMILY/NAME.js and run by `npm run bench:NAME`, `media-worker bench NAME` or
 * `node dist/bench/FAMILY/NAME.js`, all with the same flags (bench/harness.ts); bench/README.md
 * tells the families apart. Pure data: the command line imports it without loading any benchmark.
 */

/** The families, in the order `media-worker bench` lists them; each is the folder bench/ID/. */
export const FAMILIES = [
  { id: 'inference', title: 'Inference and tiles' },
  { id: 'video', title: 'Video' },
  { id: 'fidelity', title: 'Fidelity' },
  { id: 'gateway', title: 'Gateway and protocol' },
  { id: 'music-lipsync', title: 'Music and lip-sync' },
] as const;

export type BenchFamily = (typeof FAMILIES)[number]['id'];

export interface BenchEntry {
  /** bench/FAMILY/NAME.ts */
  name: string;
  /** The folder under bench/ it lives in. */
  family: BenchFamily;
  /** What it measures, one line. */
  summary: string;
}

export const BENCHMARKS: readonly BenchEntry[] = [
  {
    name: 'quality',
    family: 'inference',
    summary: 'super-resolution networks against bicubic on real photos: PSNR/SSIM, sharpness, blockiness, speed',
  },
  {
    name: 'image-speed',
    family: 'inference',
    summary: 'image upscaling speed per network and factor, through the file path and bare',
  },
  {
    name: 'chart',
    family: 'inference',
    summary: 'draws quality against speed (SVG/PNG) from the quality and image-speed results',
  },
  {
    name: 'realesrgan',
    family: 'inference',
    summary: 'the Real-ESRGAN networks: quality, speed and achieved FLOP/s, optionally against Upscayl',
  },
  {
    name: 'upscalerjs',
    family: 'inference',
    summary: 'our ONNX Runtime path against UpscalerJS (TF.js wasm) on the same ESRGAN weights',
  },
  {
    name: 'tiling',
    family: 'inference',
    summary: 'what tiling costs over one untiled call, and how much overlap makes tiles exact',
  },
  {
    name: 'tile-budget',
    family: 'inference',
    summary: 'the tile side a memory budget gives each network, and its time',
  },
  {
    name: 'tile-memory',
    family: 'inference',
    summary: 'bytes of memory per tile input pixel of one network (manifest tile.bytesPerPixel)',
  },
  {
    name: 'image-memory',
    family: 'inference',
    summary: 'peak memory and speed of the largest image job (a 96 MP output), file to file',
  },
  {
    name: 'gpu',
    family: 'inference',
    summary: 'image and video upscaling per execution provider (TensorRT, CUDA, CPU), optionally against Upscayl',
  },
  {
    name: 'engines',
    family: 'inference',
    summary:
      'ours fp32 and int8/bf16 against raw onnxruntime (Python) and the PyTorch reference (basicsr), one run, same input and threads',
  },
  {
    name: 'precision-gate',
    family: 'inference',
    summary:
      "each int8 variant against its float32 network on photos and video frames: PSNR, sharpness, colour, seams, speed (the manifest's gate)",
  },
  {
    name: 'gpu-device',
    family: 'inference',
    summary: "the device check's Node half (scripts/device/check.py): inputs, sessions per provider, pipeline runs",
  },
  { name: 'flicker', family: 'video', summary: 'frame-to-frame flicker of upscaled video per network' },
  {
    name: 'video',
    family: 'video',
    summary: 'video upscaling: decode and encode hidden behind the network, against frames on disk, memory over length',
  },
  {
    name: 'input-measure',
    family: 'video',
    summary: 'what measuring inputs from their streams costs, and the network work damaged inputs waste',
  },
  {
    name: 'fidelity',
    family: 'fidelity',
    summary: 'colour, A/V offset, bit depth and streams through the real pipelines (fidelity corpus)',
  },
  {
    name: 'fidelity-video',
    family: 'fidelity',
    summary: 'the video half of the fidelity corpus, and 8-bit/HDR timing',
  },
  {
    name: 'fidelity-alpha-edges',
    family: 'fidelity',
    summary: 'hard transparent edges: visible error on edge pixels, and what the transparent fill costs opaque images',
  },
  {
    name: 'task-events',
    family: 'gateway',
    summary: 'what 1,000 idle live-event streams cost one gateway, beside 1,000 polls a second',
  },
  {
    name: 'gateway',
    family: 'gateway',
    summary: 'HTTP gateway submissions and reads per second against a real nats-server',
  },
  {
    name: 'tracing',
    family: 'gateway',
    summary: 'what OpenTelemetry tracing costs a job: off (no span made) against on (OTLP/HTTP to a local sink)',
  },
  {
    name: 'warm-start',
    family: 'gateway',
    summary: "a freshly started daemon's first job against its second (warm before ready)",
  },
  { name: 'cost-model', family: 'gateway', summary: "the cost model's estimates against measured job times" },
  { name: 'calibrate-cost-model', family: 'gateway', summary: "measures this machine's speeds for the cost model" },
  { name: 'lipsync', family: 'music-lipsync', summary: 'lip-sync stages and runs: where the time goes per frame' },
  { name: 'lipsync-framing', family: 'music-lipsync', summary: 'face framing of the lip-sync crop on real faces' },
  {
    name: 'musetalk',
    family: 'music-lipsync',
    summary: 'frames per second of the MuseTalk network stage against Wav2Lip on the same frames',
  },
  { name: 'music', family: 'music-lipsync', summary: 'music generation real-time factor and the finishing stage' },
  {
    name: 'music-video',
    family: 'music-lipsync',
    summary: 'music video render speed per style against real time (1080p), and the encoder presets traded',
  },
];

export function findBenchmark(name: string): BenchEntry | undefined {
  return BENCHMARKS.find((b) => b.name === name);
}

/** FAMILY/NAME: where the benchmark NAME lives under bench/ (its .ts) and dist/bench/ (its .js). */
export function benchPath(name: string): string {
  const entry = findBenchmark(name);
  if (entry === undefined)
    throw new Error(`Expected a benchmark of bench/catalog.ts but received ${JSON.stringify(name)}`);
  return `${entry.family}/${entry.name}`;
}
