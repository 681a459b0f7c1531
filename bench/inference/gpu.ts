/**
 * The GPU benchmark, ready for a GPU host: per execution provider that passes the start-up probe
 * on its own (tensorrt, cuda, then cpu; --providers to choose), file to file as the worker runs:
 *   - Real-ESRGAN x4plus on a photo of about --photo-mp megapixels (default 1), x4, PNG out;
 *   - Real-ESRGAN x4fast on a --video-size clip (default 1920x1080, --frames frames at 30 fps)
 *     upscaled x2 (1080p to 4K) with the H.264 encode (libx264: the H100 has no NVENC);
 *   - the share of GPU time busy during each step (nvidia-smi sampled every 200 ms, where present);
 *   - upscayl-bin (Upscayl's realesrgan-ncnn-vulkan) on the same photo and GPU, where present
 *     (--upscayl-bin, default .cache/upscayl/upscayl-bin with its ncnn files, as bench/inference/realesrgan.ts unpacks them).
 * The sessions, tile budget and float16 graphs are the worker's (src/hardware.ts), from the
 * environment's settings with the provider replaced. On a CPU host the same steps run on the CPU:
 * keep them small there (--photo-mp 0.06 --frames 2 --video-size 640x360).
 *
 *   media-worker bench gpu --help
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { loadConfig } from '../../src/config.js';
import { srHardwareOptions } from '../../src/app/index.js';
import {
  type ExecutionProviderName,
  SessionCache,
  createSrModelLoader,
  parseExecutionProviders,
  probeExecutionProviders,
} from '../../src/inference/index.js';
import { probeImage, probeMedia, resolveFfmpeg, runProcess } from '../../src/media/index.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../../src/paths.js';
import { upscaleImageFile } from '../../src/kinds/image-upscale/pipeline/index.js';
import { upscaleVideoFile } from '../../src/kinds/video-upscale/pipeline/index.js';
import { TABLES } from '../blocks.js';
import { describeMachine, machineInfo } from '../common.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'gpu',
  options: {
    'photo-mp': { type: 'string', arg: 'MP', help: 'megapixels of the photo upscaled x4', default: '1' },
    frames: { type: 'string', arg: 'N', help: 'frames of the clip upscaled x2', default: '60' },
    'video-size': { type: 'string', arg: 'WxH', help: "the clip's size", default: '1920x1080' },
    'upscayl-bin': {
      type: 'string',
      arg: 'PATH',
      help: 'upscayl-bin to compare with (default .cache/upscayl/upscayl-bin, where present)',
    },
  },
  common: {
    providers: {
      default: 'tensorrt,cuda,cpu',
      help: 'execution providers measured, each on its own where its probe passes',
    },
  },
  notes: 'On a CPU host keep it small: --providers cpu --photo-mp 0.06 --frames 2 --video-size 640x360.',
});
const values = cli.values;

const target = await docsTarget('gpu', values);
const machine = describeMachine(machineInfo());
const FPS = 30;
const frames = Number(values.frames);
const [videoWidth, videoHeight] = (values['video-size'] ?? '').split('x').map(Number);
if (!Number.isInteger(frames) || frames < 1 || !videoWidth || !videoHeight)
  throw new RangeError('Expected --frames to be a positive integer and --video-size WxH');

/** Mean GPU utilisation while `work` runs, from nvidia-smi; undefined where there is none. */
async function gpuBusy<T>(work: () => Promise<T>): Promise<{ result: T; busy?: number }> {
  const hasSmi = spawnSync('nvidia-smi', ['-L'], { stdio: 'ignore' }).status === 0;
  if (!hasSmi) return { result: await work() };
  const sampler = spawn('nvidia-smi', ['--query-gpu=utilization.gpu', '--format=csv,noheader,nounits', '-lms', '200'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const samples: number[] = [];
  sampler.stdout.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim() !== '') samples.push(Number(line.trim()));
  });
  try {
    const result = await work();
    return samples.length === 0 ? { result } : { result, busy: samples.reduce((a, b) => a + b, 0) / samples.length };
  } finally {
    sampler.kill();
  }
}

async function timed<T>(work: () => Promise<T>): Promise<{ seconds: number; busy?: number }> {
  const started = performance.now();
  const { busy } = await gpuBusy(work);
  return { seconds: (performance.now() - started) / 1000, ...(busy === undefined ? {} : { busy }) };
}

const work = await mkdtemp(path.join(tmpdir(), 'bench-gpu-'));
const rows: string[][] = [];
try {
  // Inputs: a real photo scaled to the asked size; a synthetic clip with motion and detail.
  const photo = path.join(work, 'photo.png');
  const side = Math.round(Math.sqrt(Number(values['photo-mp']) * 1e6));
  await sharp(path.join(BUNDLED_PHOTOS_DIR, 'astronaut.png'))
    .resize(side, side, { kernel: 'lanczos3' })
    .png()
    .toFile(photo);
  const clip = path.join(work, 'clip.mp4');
  const ffmpeg = await resolveFfmpeg();
  await runProcess(
    ffmpeg,
    [
      '-hide_banner',
      '-v',
      'error',
      '-nostdin',
      '-y',
      '-f',
      'lavfi',
      '-i',
      `testsrc2=size=${videoWidth}x${videoHeight}:rate=${FPS}`,
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
  const photoInfo = await probeImage(photo);
  const clipInfo = await probeMedia(clip);

  const upscaylBin = values['upscayl-bin'] ?? path.join(PACKAGE_ROOT, '.cache', 'upscayl', 'upscayl-bin');
  const upscaylModels = path.join(path.dirname(upscaylBin), 'models');
  const upscayl = existsSync(upscaylBin) && existsSync(path.join(upscaylModels, 'realesrgan-x4plus.param'));

  for (const provider of parseExecutionProviders(values.providers)) {
    const probe = await probeExecutionProviders([provider]);
    if (probe.active !== provider) {
      console.log(`# ${provider}: not available here (${probe.failures[0]?.error ?? 'unknown'}); skipped`);
      continue;
    }
    const providers: ExecutionProviderName[] = [provider];
    const config = { ...loadConfig(), executionProviders: providers };
    const sessions = new SessionCache({ executionProviders: providers, threads: config.threads });
    const load = createSrModelLoader({
      sessions,
      ...srHardwareOptions(config),
      modelsDir: config.modelsDir,
      ...(config.modelFilesDir === undefined ? {} : { filesDir: config.modelFilesDir }),
    });
    try {
      const photoOut = path.join(work, `photo-${provider}.png`);
      const photoRun = () =>
        upscaleImageFile(
          { inputPath: photo, outputPath: photoOut, factor: '4', info: photoInfo, modelName: 'realesrgan-x4plus' },
          load,
        );
      await photoRun(); // opens the session (and builds TensorRT's engine) before the timed run
      const image = await timed(photoRun);
      let theirs = '-';
      if (upscayl && provider !== 'cpu') {
        const ncnn = await timed(async () => {
          const r = spawnSync(
            upscaylBin,
            [
              '-i',
              photo,
              '-o',
              path.join(work, 'upscayl.png'),
              '-m',
              upscaylModels,
              '-n',
              'realesrgan-x4plus',
              '-s',
              '4',
            ],
            { stdio: 'ignore' },
          );
          if (r.status !== 0) throw new Error(`upscayl-bin failed (status ${r.status})`);
        });
        theirs = ncnn.seconds.toFixed(2);
      }
      const outMp = (photoInfo.width * photoInfo.height * 16) / 1e6;
      rows.push([
        provider,
        'x4plus photo x4, PNG',
        `${photoInfo.width}x${photoInfo.height}`,
        image.seconds.toFixed(2),
        (outMp / image.seconds).toFixed(3),
        image.busy?.toFixed(0) ?? '-',
        theirs,
      ]);
      console.log(rows.at(-1)?.join(' | '));

      const videoRun = () =>
        upscaleVideoFile(
          {
            inputPath: clip,
            outputPath: path.join(work, `clip-${provider}.mp4`),
            factor: '2',
            info: clipInfo,
            modelName: 'realesrgan-x4fast',
          },
          load,
        );
      const video = await timed(videoRun);
      const videoOutMp = (videoWidth * videoHeight * 4 * frames) / 1e6;
      rows.push([
        provider,
        `x4fast clip x2, H.264, ${frames} frames`,
        `${videoWidth}x${videoHeight}`,
        video.seconds.toFixed(2),
        (videoOutMp / video.seconds).toFixed(3),
        video.busy?.toFixed(0) ?? '-',
        '-',
      ]);
      console.log(rows.at(-1)?.join(' | '));
    } finally {
      await sessions.release();
    }
  }
} finally {
  await rm(work, { recursive: true, force: true });
}

const header = TABLES.gpu.header;
console.log(`\n${markdownTable(header, rows)}`);
const tables = [
  {
    caption: 'File to file, one run each after a warm-up of the photo step (sessions open, engines built):',
    header,
    rows,
  },
];
await writeDocsBlock(target, 'gpu', tables, machine);
await cli.done({ tables });
