/**
 * The Node half of the device check (scripts/device/check.py drives it on the bare GPU machine):
 * one sub-command per process, each printing JSON lines, so the driver can time, sample the GPU
 * and kill a step that outruns its budget without losing the others.
 *
 *   node dist/bench/inference/gpu-device.js inputs --work DIR --photo-mp 1 --video-size 1920x1080 --frames 30 [--tag NAME]
 *       writes DIR/photo[-NAME].png (the bundled astronaut, resized) and DIR/clip[-NAME].mp4 (testsrc2, libx264)
 *   node dist/bench/inference/gpu-device.js open --provider webgpu [--networks realesrgan-x4plus,realesrgan-x4fast]
 *       per network and precision: does a session open on exactly that provider (no CPU fallback) and run a tile?
 *   node dist/bench/inference/gpu-device.js run --kind image|video --provider webgpu|cpu --precision fp32|fp16 --input FILE --out FILE [--runs 2] [--network NAME]
 *       the worker's own pipeline file to file (upscaleImageFile x4 with x4plus, upscaleVideoFile x2 with x4fast);
 *       the first run opens the session (and compiles WebGPU's shaders), the later ones are warm
 *   node dist/bench/inference/gpu-device.js precision [--precision int8] [--provider-lists "tensorrt,cuda;cuda"]
 *       per provider list: the worker's start (provider probe, then WORKER_PRECISION) with that list and
 *       the CPU allowed to stand in; what runs, or the refusal it prints (issue 48: int8 on a GPU needs TensorRT)
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import {
  type ExecutionProviderName,
  SessionCache,
  createSrModelLoader,
  ensureModelFile,
  getManifest,
  parseExecutionProviders,
  sessionOptions,
} from '../../src/inference/index.js';
import { probeImage, probeMedia, resolveFfmpeg, runProcess } from '../../src/media/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../src/paths.js';
import { upscaleImageFile } from '../../src/kinds/image-upscale/pipeline/index.js';
import { upscaleVideoFile } from '../../src/kinds/video-upscale/pipeline/index.js';
import { firstErrorLine } from '../../src/errors.js';
import { probeHardware } from '../../src/app/index.js';
import { loadConfig } from '../../src/config.js';
import { benchCli } from '../harness.js';

const NETWORKS = { image: 'realesrgan-x4plus', video: 'realesrgan-x4fast' } as const;
const FPS = 30;

// Its flags are scripts/device/check.py's: one provider and network names of its own, not the common flags.
const cli = benchCli({
  name: 'gpu-device',
  positionals: 'inputs|open|run|precision',
  options: {
    work: { type: 'string', arg: 'DIR', help: 'inputs: where the photo and the clip go', default: '.' },
    tag: { type: 'string', arg: 'NAME', help: 'inputs: suffix of their names', default: '' },
    'photo-mp': { type: 'string', arg: 'MP', help: 'inputs: megapixels of the photo', default: '1' },
    'video-size': { type: 'string', arg: 'WxH', help: "inputs: the clip's size", default: '1920x1080' },
    frames: { type: 'string', arg: 'N', help: "inputs: the clip's frames", default: '30' },
    provider: { type: 'string', arg: 'NAME', help: 'open, run: the one execution provider', default: 'webgpu' },
    precision: {
      type: 'string',
      arg: 'fp32|fp16',
      help: "run: the graphs' precision; precision: WORKER_PRECISION (default int8)",
    },
    'provider-lists': {
      type: 'string',
      arg: 'A,B;C',
      help: 'precision: provider lists tried, one start each',
      default: 'tensorrt,cuda;cuda;webgpu',
    },
    kind: { type: 'string', arg: 'image|video', help: 'run: the pipeline', default: 'image' },
    input: { type: 'string', arg: 'FILE', help: 'run: the input' },
    out: { type: 'string', arg: 'FILE', help: 'run: the output' },
    runs: { type: 'string', arg: 'N', help: 'run: runs (the first opens the session)', default: '2' },
    network: { type: 'string', arg: 'NAME', help: 'run: the network (default: x4plus for images, x4fast for video)' },
    networks: {
      type: 'string',
      arg: 'NAME,NAME',
      help: 'open: the networks tried',
      default: Object.values(NETWORKS).join(','),
    },
  },
  notes: 'Driven by scripts/device/check.py; each sub-command prints JSON lines.',
});
const { positionals, values } = cli;

function emit(record: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(record)}\n`);
}

function positiveInt(name: string, text: string | undefined): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`Expected --${name} to be a positive integer but received ${String(text)}`);
  return n;
}

function onlyProvider(text: string | undefined): ExecutionProviderName {
  const [provider, ...rest] = parseExecutionProviders(text ?? '');
  if (provider === undefined || rest.length > 0)
    throw new RangeError(`Expected --provider to name one execution provider but received ${String(text)}`);
  return provider;
}

function precisionOf(text: string | undefined = 'fp32'): 'fp32' | 'fp16' {
  if (text !== 'fp32' && text !== 'fp16')
    throw new RangeError(`Expected --precision to be fp32 or fp16 but received ${String(text)}`);
  return text;
}

async function inputs(): Promise<void> {
  const work = path.resolve(values.work);
  await mkdir(work, { recursive: true });
  const suffix = values.tag === '' ? '' : `-${values.tag}`;
  const photo = path.join(work, `photo${suffix}.png`);
  const side = Math.round(Math.sqrt(Number(values['photo-mp']) * 1e6));
  if (!Number.isFinite(side) || side < 8)
    throw new RangeError(`Expected --photo-mp to give a side of at least 8 px but received ${values['photo-mp']}`);
  await sharp(path.join(BUNDLED_PHOTOS_DIR, 'astronaut.png'))
    .resize(side, side, { kernel: 'lanczos3' })
    .png()
    .toFile(photo);
  const [width, height] = values['video-size'].split('x').map(Number);
  if (!width || !height) throw new RangeError(`Expected --video-size WxH but received ${values['video-size']}`);
  const frames = positiveInt('frames', values.frames);
  const clip = path.join(work, `clip${suffix}.mp4`);
  await runProcess(
    resolveFfmpeg(),
    [
      '-hide_banner',
      '-v',
      'error',
      '-nostdin',
      '-y',
      '-f',
      'lavfi',
      '-i',
      `testsrc2=size=${width}x${height}:rate=${FPS}`,
      '-frames:v',
      String(frames),
      '-c:v',
      'libx264',
      '-crf',
      '18',
      '-pix_fmt',
      'yuv420p',
      clip,
    ],
    { maxStdoutBytes: 1024 },
  );
  emit({ event: 'inputs', photo, photoSide: side, clip, video: `${width}x${height}`, frames });
}

/** Opens each network's file on exactly one provider (no fallback) and runs one small tile through it. */
async function open(): Promise<void> {
  const provider = onlyProvider(values.provider);
  for (const network of values.networks.split(',')) {
    const manifest = await getManifest(network);
    if (manifest.task !== 'super-resolution') throw new Error(`Expected ${network} to be a super-resolution model`);
    for (const precision of ['fp32', 'fp16'] as const) {
      const name = precision === 'fp16' ? manifest.halfPrecision : network;
      if (name === undefined) continue;
      const started = performance.now();
      try {
        const file = await ensureModelFile(name);
        const session = await ort.InferenceSession.create(file.path, sessionOptions([provider], 0));
        try {
          const side = 32;
          const input = new ort.Tensor(
            'float32',
            Float32Array.from({ length: 3 * side * side }, (_, i) => (i * 37) % 256),
            [1, 3, side, side],
          );
          const result = await session.run({ input });
          const data = result['output']?.data;
          if (
            !(data instanceof Float32Array) ||
            data.length !== 3 * side * side * manifest.scale ** 2 ||
            data.some((v) => !Number.isFinite(v))
          ) {
            throw new Error(`the output of ${name} on ${provider} is missing or not finite`);
          }
        } finally {
          await session.release();
        }
        emit({ event: 'open', provider, network, precision, ok: true, seconds: (performance.now() - started) / 1000 });
      } catch (error) {
        emit({
          event: 'open',
          provider,
          network,
          precision,
          ok: false,
          seconds: (performance.now() - started) / 1000,
          error: firstErrorLine(error),
        });
      }
    }
  }
}

async function run(): Promise<void> {
  const provider = onlyProvider(values.provider);
  const precision = precisionOf(values.precision);
  const kind = values.kind;
  if (kind !== 'image' && kind !== 'video') throw new RangeError(`Expected --kind image or video but received ${kind}`);
  if (values.input === undefined || values.out === undefined)
    throw new RangeError('Expected --input FILE and --out FILE');
  const runs = positiveInt('runs', values.runs);
  const network = values.network ?? NETWORKS[kind];
  // Sessions on exactly this provider: the driver only asks for a GPU run once `open` passed.
  const sessions = new SessionCache({ executionProviders: [provider], threads: 0 });
  const load = createSrModelLoader({ sessions, halfPrecision: precision === 'fp16' });
  const input = path.resolve(values.input);
  const output = path.resolve(values.out);
  try {
    const work =
      kind === 'image'
        ? await probeImage(input).then(
            (info) => () =>
              upscaleImageFile({ inputPath: input, outputPath: output, factor: '4', info, modelName: network }, load),
          )
        : await probeMedia(input).then(
            (info) => () =>
              upscaleVideoFile({ inputPath: input, outputPath: output, factor: '2', info, modelName: network }, load),
          );
    for (let i = 0; i < runs; i += 1) {
      const startMs = Date.now();
      const started = performance.now();
      await work();
      emit({
        event: 'run',
        kind,
        provider,
        precision,
        network,
        run: i + 1,
        cold: i === 0,
        startMs,
        endMs: Date.now(),
        seconds: (performance.now() - started) / 1000,
        output,
      });
    }
  } finally {
    await sessions.release();
  }
}

/** The worker's own start for each provider list: the provider probe, then WORKER_PRECISION on what answered. */
async function precision(): Promise<void> {
  const setting = values.precision ?? 'int8';
  for (const providers of values['provider-lists'].split(';').filter((p) => p !== '')) {
    const started = performance.now();
    try {
      const config = loadConfig(process.env, {
        executionProviders: providers,
        precision: setting,
        cpuFallback: 'true',
      });
      const hardware = await probeHardware(config);
      emit({
        event: 'precision',
        providers,
        setting,
        active: hardware.probe.active,
        failures: hardware.probe.failures.map((f) => `${f.provider}: ${f.error}`),
        outcome: 'runs',
        networks: hardware.precision.networks,
        seconds: (performance.now() - started) / 1000,
      });
    } catch (error) {
      emit({
        event: 'precision',
        providers,
        setting,
        outcome: 'refused',
        error: firstErrorLine(error),
        seconds: (performance.now() - started) / 1000,
      });
    }
  }
}

const commands: Record<string, () => Promise<void>> = { inputs, open, run, precision };
const command = commands[positionals[0] ?? ''];
if (command === undefined) {
  process.stderr.write(
    `Expected a sub-command (${Object.keys(commands).join(', ')}) but received ${positionals[0] ?? 'none'}\n`,
  );
  process.exitCode = 2;
} else {
  await command().catch((error: unknown) => {
    emit({ event: 'error', error: firstErrorLine(error) });
    process.exitCode = 1;
  });
  await cli.done({});
}
