/**
 * The built command line (dist/, made by `npm test`'s build step), run as a user would.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../src/paths.js';
import { encodeClip, faceFrames, SIDE, speechClip } from './kinds/lipsync/pipeline/pipeline-fixtures.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], opts: { env?: NodeJS.ProcessEnv; input?: string; cwd?: string } = {}): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      // The compiled code of the dist/ modules is kept between the runs of this file (V8's code cache, no behaviour of its own).
      {
        env: {
          ...process.env,
          LOG_LEVEL: 'warn',
          NODE_COMPILE_CACHE: path.join(dir, 'node-compile-cache'),
          ...opts.env,
        },
        cwd: opts.cwd ?? PACKAGE_ROOT,
        timeout: 120_000,
      },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
    child.stdin?.end(opts.input ?? '');
  });
}

let dir: string;
let smallPhoto: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-cli-'));
  smallPhoto = path.join(dir, 'coffee-small.jpg');
  // Small: each upscale of it runs the default network (x4plus) on the CPU.
  await sharp(path.join(BUNDLED_PHOTOS_DIR, 'coffee.png')).resize(48, 32).jpeg().toFile(smallPhoto);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('--help', () => {
  const commands = [
    [],
    ['quote'],
    ['run'],
    ['serve'],
    ['upscale-image'],
    ['upscale-video'],
    ['lipsync'],
    ['music'],
    ['models'],
    ['models', 'list'],
    ['models', 'prepare'],
    ['config'],
    ['gateway'],
    ['accounts'],
    ['accounts', 'create'],
    ['accounts', 'topup'],
    ['accounts', 'add-key'],
    ['accounts', 'show'],
    ['provision'],
  ];
  it.each(commands.map((c) => [c.join(' '), c] as const))('media-worker %s --help', async (_name, args) => {
    const r = await cli([...args, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: media-worker');
  });
});

describe('quote', () => {
  const job = (image: string, factor = '4') =>
    JSON.stringify({ model: 'vendor-image-upscale', input: { image_url: image, upscale_factor: factor } });

  it('prints the price and the spec echo fields, exit 0', async () => {
    const r = await cli(['quote', job(path.join(BUNDLED_PHOTOS_DIR, 'coffee.png'))]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      model: 'vendor-image-upscale',
      creditsUsed: 20, // 600x400 x4 = 3.84 MP, the first tier
      // The cost estimate (docs/contract.md, "Work limits and the cost estimate"): one frame, on this machine's class.
      estimated_frames: 1,
      estimated_seconds: expect.any(Number),
      hardware_class: 'cpu',
      input: {
        image_url: path.join(BUNDLED_PHOTOS_DIR, 'coffee.png'),
        upscale_factor: '4',
        detected_dimensions: '600×400',
        output_tier: '24mp',
      },
    });
  });

  it('reads the job from @file and from standard input', async () => {
    const file = path.join(dir, 'job.json');
    await writeFile(file, job(smallPhoto, '2'));
    const fromFile = await cli(['quote', `@${file}`]);
    const fromStdin = await cli(['quote', '-'], { input: job(smallPhoto, '2') });
    expect(fromFile.code).toBe(0);
    expect(JSON.parse(fromFile.stdout).input.detected_dimensions).toBe('48×32');
    expect(fromStdin.stdout).toBe(fromFile.stdout);
  });

  it.each([
    [
      'a bad factor',
      { model: 'vendor-image-upscale', input: { image_url: 'x.png', upscale_factor: '8' } },
      'INVALID_UPSCALE_FACTOR',
      400,
    ],
    ['an unknown model', { model: 'vendor-image-upscale-9', input: {} }, 'UNKNOWN_MODEL', 400],
    [
      'a text file named .png',
      { model: 'vendor-image-upscale', input: { image_url: 'README.md' } },
      'PROBE_FAILED',
      422,
    ],
  ])('rejects %s with the spec error body, exit 2', async (_what, body, code, status) => {
    const r = await cli(['quote', JSON.stringify(body)]);
    expect(r.code).toBe(2);
    const parsed = JSON.parse(r.stdout) as { error: { code: string; status: number; message: string } };
    expect(parsed.error).toMatchObject({ code, status });
    expect(parsed.error.message.length).toBeGreaterThan(10);
  });

  it('exits 1 with a message on JSON that does not parse', async () => {
    const r = await cli(['quote', '{not json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Expected JSON in the JOB argument');
  });

  it('serve exits 1 naming the variable of a bad daemon setting, before connecting anywhere', async () => {
    const r = await cli(['serve'], { env: { WORKER_ACK_WAIT_MS: 'soon', NATS_URL: 'nats://127.0.0.1:1' } });
    expect(r.code).toBe(1);
    // A daemon's stderr is JSON lines, its failure too (issue 47, item 4).
    const records = r.stderr
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(records).toContainEqual(
      expect.objectContaining({
        level: 50,
        msg: 'Invalid setting WORKER_ACK_WAIT_MS: Expected an integer of at least 1000 but received "soon"',
      }),
    );
  });

  it('exits 1 naming the variable of a bad setting', async () => {
    const r = await cli(['quote', job(smallPhoto)], { env: { MEDIA_WORKER_THREADS: 'lots' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Invalid setting MEDIA_WORKER_THREADS');
  });
});

describe('config', () => {
  it('prints every setting of every command, credentials hidden', async () => {
    const r = await cli(['config'], {
      env: {
        NATS_TOKEN: 's3cret',
        RESULTS_DIR: '/srv/results',
        WORKER_CONCURRENCY: 'image=2',
        OTEL_EXPORTER_OTLP_HEADERS: 'api-key=h3ader',
      },
    });
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.stdout);
    expect(Object.keys(shown)).toEqual(['pipelines', 'daemon', 'gateway', 'tracing']);
    expect(shown.tracing).toMatchObject({ OTEL_EXPORTER_OTLP_HEADERS: '(set)', OTEL_EXPORTER_OTLP_ENDPOINT: null });
    expect(r.stdout).not.toContain('h3ader');
    expect(shown.pipelines).toMatchObject({ LOG_LEVEL: 'warn', FFMPEG_PATH: null });
    expect(shown.daemon).toMatchObject({
      NATS_TOKEN: '(set)',
      NATS_PASSWORD: null,
      RESULTS_DIR: '/srv/results',
      WORKER_CONCURRENCY: { image: 2 },
    });
    expect(r.stdout).not.toContain('s3cret');
  });

  it('hides the passwords and tokens written into URLs, the rest shown as written', async () => {
    const r = await cli(['config'], {
      env: {
        MEDIA_WORKER_SYNC_BASE_URL: 'https://alice:pa55-sync@sync.example/',
        MEDIA_WORKER_SUNO_CALLBACK_URL: 'https://hooks.example/suno?token=pa55-hook&task=1',
        NATS_URL: 'nats://u:pa55-nats@a:4222,nats://u:pa55-nats@b:4222',
        RESULTS_S3_ENDPOINT: 'https://minio:pa55-s3@minio.internal:9000',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel:pa55-otel@collector:4318',
      },
    });
    expect(r.code).toBe(0);
    const shown = JSON.parse(r.stdout);
    expect(shown.pipelines).toMatchObject({
      MEDIA_WORKER_SYNC_BASE_URL: 'https://alice:***@sync.example/',
      MEDIA_WORKER_SUNO_CALLBACK_URL: 'https://hooks.example/suno?token=***&task=1',
    });
    expect(shown.daemon).toMatchObject({
      NATS_URL: 'nats://u:***@a:4222,nats://u:***@b:4222',
      RESULTS_S3_ENDPOINT: 'https://minio:***@minio.internal:9000',
    });
    expect(shown.tracing).toMatchObject({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel:***@collector:4318' });
    expect(r.stdout + r.stderr).not.toContain('pa55');
  });

  it('exits 1 naming a bad daemon setting', async () => {
    const r = await cli(['config'], { env: { WORKER_CONCURRENCY: 'bogus', MEDIA_WORKER_THREADS: 'many' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Invalid setting WORKER_CONCURRENCY');
    expect(r.stderr).toContain('Invalid setting MEDIA_WORKER_THREADS');
  });

  it('warns about a variable no setting reads, naming the closest setting', async () => {
    const r = await cli(['config'], { env: { MEDIA_WORKER_RESULTS_DIR: '/srv/results' } });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('Unknown setting MEDIA_WORKER_RESULTS_DIR');
    expect(r.stderr).toContain('did you mean RESULTS_DIR?');
  });
});

describe('models list', () => {
  it('prints whether each file is present', async () => {
    const files = await mkdtemp(path.join(dir, 'files-'));
    const r = await cli(['models', 'list'], { env: { MEDIA_WORKER_MODEL_FILES_DIR: files } });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^esrgan-slim-x2 .* esrgan-slim-x2\.onnx +missing \(made on first use\)$/m);
    const here = await cli(['models', 'list']);
    expect(here.stdout).toMatch(/^esrgan-slim-x2 .* present$/m);
    // Each network's licence and whether a paid service may run it.
    expect(here.stdout).toMatch(/^esrgan-slim-x2 .* MIT +may be sold: yes +esrgan-slim-x2\.onnx/m);
    expect(here.stdout).toMatch(/^wav2lip-test .* MIT +may be sold: yes +wav2lip-test\.onnx/m);
  });
});

describe('upscale-image and run', () => {
  it('upscales a photo x2 into the requested file and prints the completed task', async () => {
    const out = path.join(dir, 'out.jpg');
    const r = await cli(['upscale-image', smallPhoto, '--factor', '2', '-o', out]);
    expect(r.code).toBe(0);
    const task = JSON.parse(r.stdout);
    expect(task).toMatchObject({
      model: 'vendor-image-upscale',
      status: 'completed',
      creditsUsed: 20,
      result: { url: out, type: 'image', width: 96, height: 64 },
    });
    expect(new Date(task.createdAt).toISOString()).toBe(task.createdAt);
    const meta = await sharp(out).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 96, 64]);
  });

  it('run writes the result into a directory and leaves no temp files', async () => {
    const outDir = await mkdtemp(path.join(dir, 'results-'));
    const tmp = await mkdtemp(path.join(dir, 'tmp-'));
    const job = {
      id: 'cli-run-1',
      model: 'vendor-image-upscale',
      input: { image_url: smallPhoto, upscale_factor: '1' },
    };
    const r = await cli(['run', JSON.stringify(job), '-o', outDir], { env: { MEDIA_WORKER_TMP_DIR: tmp } });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      id: 'cli-run-1',
      result: { url: path.join(outDir, 'cli-run-1.jpg'), width: 48, height: 32 },
    });
    expect(await readdir(outDir)).toEqual(['cli-run-1.jpg']);
    expect(await readdir(tmp)).toEqual([]);
  });

  it('-o dir/ with a missing directory creates it and writes the result inside', async () => {
    const outDir = path.join(dir, 'made-for-me');
    const r = await cli(['upscale-image', smallPhoto, '--factor', '1', '-o', `${outDir}/`]);
    expect(r.code).toBe(0);
    expect(await readdir(outDir)).toEqual(['coffee-small-x1.jpg']);
  });

  it('upscale-image prints the estimate for this machine first and runs past the service limit; run and quote keep it (JOB_TOO_COSTLY)', async () => {
    // A 1 ms watchdog: every image job is over the service's limit.
    const env = { WORKER_WATCHDOG_MS: 'image=1' };
    const out = path.join(dir, 'past-the-limit.jpg');
    const r = await cli(['upscale-image', smallPhoto, '--factor', '2', '-o', out], { env });
    expect(r.code).toBe(0);
    expect(r.stderr.split('\n')[0]).toMatch(
      /^estimate on this machine \(cpu, \d+ cores?\): \d+\.\ds with realesrgan-x4plus/,
    );
    expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed', result: { width: 96, height: 64 } });
    // run and quote refuse by the estimate before any work: a 600x400 photo at x4plus is estimated
    // well over 5 s on a CPU, while its quote (a local file) takes far less. (With a 1 ms limit,
    // run's deadline, which covers its quote as the daemon's does, would fire first.)
    const limited = { WORKER_WATCHDOG_MS: 'image=5000' };
    const job = JSON.stringify({
      model: 'vendor-image-upscale',
      input: { image_url: path.join(BUNDLED_PHOTOS_DIR, 'coffee.png'), upscale_factor: '2' },
    });
    for (const command of ['run', 'quote']) {
      const refused = await cli([command, job], { env: limited });
      expect(refused.code).toBe(2);
      expect(JSON.parse(refused.stdout).error).toMatchObject({
        code: 'JOB_TOO_COSTLY',
        message: expect.stringContaining('estimated processing time on cpu'),
      });
    }
  });

  it('configured for CUDA on this CPU-only machine: refuses, naming the provider and the setting; with CPU fallback allowed it runs on the CPU', async () => {
    const env = { MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda,cpu' };
    const refused = await cli(
      ['upscale-image', smallPhoto, '--model', 'realesrgan-x4fast', '-o', path.join(dir, 'no-cuda.jpg')],
      { env },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('execution provider cuda could not start');
    expect(refused.stderr).toContain('set MEDIA_WORKER_CPU_FALLBACK=true');
    const allowed = await cli(
      ['upscale-image', smallPhoto, '--model', 'realesrgan-x4fast', '-o', path.join(dir, 'cpu-fallback.jpg')],
      {
        env: { ...env, MEDIA_WORKER_CPU_FALLBACK: 'true' },
      },
    );
    expect(allowed.code).toBe(0);
    expect(allowed.stderr).toMatch(/^estimate on this machine \(cpu, /);
  });

  it('rejects an unknown --model with INVALID_MODEL', async () => {
    const r = await cli(['upscale-image', smallPhoto, '--model', 'esrgan-huge-x2']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).error.code).toBe('INVALID_MODEL');
  });
});

describe('upscale-video', () => {
  it('names a Matroska input`s result .mkv (Matroska in, Matroska out) and an MP4`s .mp4, in the file and the printed url', async () => {
    const ffmpeg = (args: string[]): Promise<unknown> =>
      new Promise((resolve, reject) =>
        execFile('ffmpeg', ['-v', 'error', '-y', ...args], (err) => (err === null ? resolve(undefined) : reject(err))),
      );
    const outDir = path.join(dir, 'videos');
    for (const ext of ['mkv', 'mp4']) {
      const clip = path.join(dir, `tiny.${ext}`);
      await ffmpeg([
        '-f',
        'lavfi',
        '-i',
        'testsrc=size=32x24:rate=10:duration=0.3',
        '-c:v',
        'libx264',
        '-preset',
        'ultrafast',
        '-pix_fmt',
        'yuv420p',
        clip,
      ]);
      const r = await cli(['upscale-video', clip, '--factor', '2', '-o', `${outDir}/`], {
        env: { MEDIA_WORKER_SR_MODELS: 'video=esrgan-slim-x2' },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({
        status: 'completed',
        result: { type: 'video', url: path.join(outDir, `tiny-x2.${ext}`), width: 64, height: 48 },
      });
    }
    expect((await readdir(outDir)).sort()).toEqual(['tiny-x2.mkv', 'tiny-x2.mp4']);
  });

  it('keeps HLG as 10-bit HLG by default and tone-maps it to 8-bit BT.709 with --hdr sdr; refuses another mode', async () => {
    const clip = path.join(dir, 'hlg.mp4');
    await new Promise((resolve, reject) =>
      execFile(
        'ffmpeg',
        [
          '-v',
          'error',
          '-y',
          '-f',
          'lavfi',
          '-i',
          'testsrc=size=32x24:rate=10:duration=0.3',
          '-c:v',
          'libx265',
          '-x265-params',
          'log-level=error',
          '-preset',
          'ultrafast',
          '-pix_fmt',
          'yuv420p10le',
          '-color_primaries',
          'bt2020',
          '-color_trc',
          'arib-std-b67',
          '-colorspace',
          'bt2020nc',
          clip,
        ],
        (err) => (err === null ? resolve(undefined) : reject(err)),
      ),
    );
    const probe = async (file: string): Promise<Record<string, unknown>> => {
      const { stdout } = await promisify(execFile)('ffprobe', [
        '-v',
        'error',
        '-select_streams',
        'v:0',
        '-show_entries',
        'stream=codec_name,pix_fmt,color_transfer',
        '-of',
        'json',
        file,
      ]);
      return (JSON.parse(stdout) as { streams: Record<string, unknown>[] }).streams[0]!;
    };
    const env = { env: { MEDIA_WORKER_SR_MODELS: 'video=esrgan-slim-x2' } };
    const kept = await cli(['upscale-video', clip, '-o', path.join(dir, 'hlg-keep.mp4')], env);
    expect(kept.code, kept.stderr).toBe(0);
    expect(await probe(path.join(dir, 'hlg-keep.mp4'))).toMatchObject({
      codec_name: 'hevc',
      pix_fmt: 'yuv420p10le',
      color_transfer: 'arib-std-b67',
    });
    const sdr = await cli(['upscale-video', clip, '--hdr', 'sdr', '-o', path.join(dir, 'hlg-sdr.mp4')], env);
    expect(sdr.code, sdr.stderr).toBe(0);
    expect(await probe(path.join(dir, 'hlg-sdr.mp4'))).toMatchObject({
      codec_name: 'h264',
      pix_fmt: 'yuv420p',
      color_transfer: 'bt709',
    });
    const bad = await cli(['upscale-video', clip, '--hdr', 'dim']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('keep, sdr');
  });
});

describe('lipsync', () => {
  let video: string;
  let audio: string;
  beforeAll(async () => {
    video = await encodeClip(path.join(dir, 'face.mp4'), await faceFrames(25), { width: SIDE, height: SIDE }, 'mp4');
    audio = await speechClip(path.join(dir, 'speech.m4a'), 2);
  });

  it('lip-syncs with the generated test model and prints the spec 2.3 lip-sync result', async () => {
    const out = path.join(dir, 'synced.mp4');
    const r = await cli(['lipsync', '--video', video, '--audio', audio, '--sync-mode', 'loop', '-o', out], {
      env: { MEDIA_WORKER_LIPSYNC_MODELS: 'wav2lip-test' },
    });
    expect(r.code).toBe(0);
    const task = JSON.parse(r.stdout);
    // loop: output = the audio's length (2 s), billed on the 1 s video at the 50-credit minimum.
    expect(task).toMatchObject({
      model: 'vendor-lipsync-2',
      status: 'completed',
      creditsUsed: 50,
      result: { url: out, type: 'video' },
    });
    expect(Object.keys(task.result).sort()).toEqual(['duration', 'type', 'url']);
    expect(task.result.duration).toBeCloseTo(2, 1);
  });

  it('fails with LIPSYNC_FAILED naming what to install when no real weights are installed', async () => {
    const r = await cli(
      ['run', JSON.stringify({ model: 'vendor-lipsync-3', input: { video_url: video, audio_url: audio } })],
      {
        env: { MEDIA_WORKER_MODELS_DIR: path.join(PACKAGE_ROOT, 'models') },
      },
    );
    expect(r.code).toBe(2);
    const { error } = JSON.parse(r.stdout);
    expect(error.code).toBe('LIPSYNC_FAILED');
    expect(error.message).toContain('install-lipsync-model');
  });
});
