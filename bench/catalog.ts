/**
 * The benchmarks, one line each: what `media-worker bench` lists and what each script's --help
 * starts with. A benchmark is bench/NAME.ts, built to dist/bench/NAME.js and run by
 * `npm run bench:NAME`, `media-worker bench NAME` or `node dist/bench/NAME.js`, all with the same
 * flags (bench/harness.ts). Pure data: the command line imports it without loading any benchmark.
 */

export interface BenchEntry {
  /** bench/NAME.ts */
  name: string;
  /** What it measures, one line. */
  summary: string;
}

export const BENCHMARKS: readonly BenchEntry[] = [
  { name: 'quality', summary: 'super-resolution networks against bicubic on real photos: PSNR/SSIM, sharpness, blockiness, speed' },
  { name: 'image-speed', summary: 'image upscaling speed per network and factor, through the file path and bare' },
  { name: 'chart', summary: 'draws quality against speed (SVG/PNG) from the quality and image-speed results' },
  { name: 'realesrgan', summary: 'the Real-ESRGAN networks: quality, speed and achieved FLOP/s, optionally against Upscayl' },
  { name: 'upscalerjs', summary: 'our ONNX Runtime path against UpscalerJS (TF.js wasm) on the same ESRGAN weights' },
  { name: 'tiling', summary: 'what tiling costs over one untiled call, and how much overlap makes tiles exact' },
  { name: 'tile-budget', summary: 'the tile side a memory budget gives each network, and its time' },
  { name: 'tile-memory', summary: 'bytes of memory per tile input pixel of one network (manifest tile.bytesPerPixel)' },
  { name: 'image-memory', summary: 'peak memory and speed of the largest image job (a 96 MP output), file to file' },
  { name: 'flicker', summary: 'frame-to-frame flicker of upscaled video per network' },
  { name: 'video', summary: 'video upscaling: decode and encode hidden behind the network, against frames on disk, memory over length' },
  { name: 'gpu', summary: 'image and video upscaling per execution provider (TensorRT, CUDA, CPU), optionally against Upscayl' },
  { name: 'gpu-device', summary: "the device check's Node half (scripts/device/check.py): inputs, sessions per provider, pipeline runs" },
  { name: 'lipsync', summary: 'lip-sync stages and runs: where the time goes per frame' },
  { name: 'lipsync-framing', summary: 'face framing of the lip-sync crop on real faces' },
  { name: 'music', summary: 'music generation real-time factor and the finishing stage' },
  { name: 'music-video', summary: 'music video render speed per style against real time (1080p), and the encoder presets traded' },
  { name: 'task-events', summary: 'what 1,000 idle live-event streams cost one gateway, beside 1,000 polls a second' },
  { name: 'gateway', summary: 'HTTP gateway submissions and reads per second against a real nats-server' },
  { name: 'tracing', summary: 'what OpenTelemetry tracing costs a job: off (no span made) against on (OTLP/HTTP to a local sink)' },
  { name: 'warm-start', summary: "a freshly started daemon's first job against its second (warm before ready)" },
  { name: 'input-measure', summary: 'what measuring inputs from their streams costs, and the network work damaged inputs waste' },
  { name: 'cost-model', summary: "the cost model's estimates against measured job times" },
  { name: 'calibrate-cost-model', summary: "measures this machine's speeds for the cost model" },
  { name: 'fidelity', summary: 'colour, A/V offset, bit depth and streams through the real pipelines (fidelity corpus)' },
  { name: 'fidelity-video', summary: 'the video half of the fidelity corpus, and 8-bit/HDR timing' },
  { name: 'fidelity-alpha-edges', summary: 'hard transparent edges: visible error on edge pixels, and what the transparent fill costs opaque images' },
];

export function findBenchmark(name: string): BenchEntry | undefined {
  return BENCHMARKS.find((b) => b.name === name);
}
