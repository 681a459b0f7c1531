/**
 * A result's name says what it holds (issue 40): `upscale-video IN.mkv -o OUT.mp4` is refused
 * before the run, naming the container and the extension to use; the built command line (dist/,
 * made by `npm test`'s build step) with real ffmpeg-made files.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { misnamedResult } from '../../src/cli/output-name.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const run = promisify(execFile);
const ENV = { ...process.env, LOG_LEVEL: 'warn', MEDIA_WORKER_SR_MODELS: 'video=esrgan-slim-x2,image=esrgan-slim-x2' };

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args], {
      env: ENV,
      cwd: PACKAGE_ROOT,
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

let dir: string;
let mkv: string;
let mp4: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-output-name-'));
  mkv = path.join(dir, 'clip.mkv');
  mp4 = path.join(dir, 'clip.mp4');
  // A Matroska file with a picture and a sound, as ffmpeg writes it; and an MP4.
  for (const file of [mkv, mp4]) {
    await run('ffmpeg', [
      '-v',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=32x24:rate=10:duration=0.3',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:duration=0.3',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      '-shortest',
      file,
    ]);
  }
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('misnamedResult', () => {
  it('accepts the format`s own extensions in any case, and a name without one', () => {
    expect(misnamedResult('out.mkv', 'mkv')).toBeUndefined();
    expect(misnamedResult('dir/OUT.JPEG', 'jpg')).toBeUndefined();
    expect(misnamedResult('out', 'mp4')).toBeUndefined();
  });

  it('names the result`s container and the file to write instead', () => {
    expect(misnamedResult('out/OUT.mp4', 'mkv')).toBe(
      'out/OUT.mp4: the result is Matroska, not MP4 (a Matroska or WebM input gives Matroska, keeping every stream); use -o out/OUT.mkv',
    );
    expect(misnamedResult('a.jpg', 'png')).toBe('a.jpg: the result is PNG, not JPEG; use -o a.png');
    expect(misnamedResult('a.bin', 'webp')).toBe('a.bin: the result is WebP, not .bin; use -o a.webp');
  });
});

describe('upscale-video -o', () => {
  it('refuses IN.mkv -o OUT.mp4 before the run, in one line naming Matroska and .mkv, and writes nothing', async () => {
    const out = path.join(dir, 'refused', 'OUT.mp4');
    const r = await cli(['upscale-video', mkv, '--factor', '2', '-o', out]);
    expect(r.code).toBe(1);
    // One line, and no estimate before it: no work started.
    expect(r.stderr).toBe(
      `media-worker: ${out}: the result is Matroska, not MP4 (a Matroska or WebM input gives Matroska, keeping every stream); use -o ${path.join(dir, 'refused', 'OUT.mkv')}\n`,
    );
    expect(r.stdout).toBe('');
    expect(await readdir(dir)).not.toContain('refused');
  });

  it('writes IN.mkv -o OUT.mkv as Matroska with both streams, and refuses IN.mp4 -o OUT.mkv', async () => {
    const out = path.join(dir, 'OUT.mkv');
    const r = await cli(['upscale-video', mkv, '--factor', '2', '-o', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ result: { url: out, width: 64, height: 48 } });
    const { stdout } = await run('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=format_name:stream=codec_type',
      '-of',
      'json',
      out,
    ]);
    const probed = JSON.parse(stdout) as { format: { format_name: string }; streams: { codec_type: string }[] };
    expect(probed.format.format_name).toContain('matroska');
    expect(probed.streams.map((s) => s.codec_type).sort()).toEqual(['audio', 'video']);

    const wrong = await cli(['upscale-video', mp4, '-o', path.join(dir, 'from-mp4.mkv')]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('the result is MP4, not Matroska; use -o ');
  });

  it('run (the job path) refuses it too, and writes nothing', async () => {
    const out = path.join(dir, 'job.mp4');
    const job = JSON.stringify({ model: 'vendor-video-upscale', input: { video_url: mkv, upscale_factor: '2' } });
    const r = await cli(['run', job, '-o', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the result is Matroska, not MP4');
    expect(await readdir(dir)).not.toContain('job.mp4');
  });
});

describe('run -o, for the kinds that always write MP4', () => {
  it.each([
    ['vendor-lipsync-2', (media: string) => ({ video_url: media, audio_url: media })],
    ['vendor-music-video', (media: string) => ({ audio_url: media, image_url: media })],
  ])(
    '%s: a result named .mkv is refused before the run (its runtime says MP4), and nothing is written',
    async (model, input) => {
      const out = path.join(dir, `${model}.mkv`);
      const r = await cli(['run', JSON.stringify({ model, input: input(mp4) }), '-o', out]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        `media-worker: ${out}: the result is MP4, not Matroska; use -o ${path.join(dir, `${model}.mp4`)}\n`,
      );
      expect(await readdir(dir)).not.toContain(`${model}.mkv`);
    },
  );
});

describe('upscale-image -o', () => {
  it('refuses a PNG`s result named .jpg before the run', async () => {
    const png = path.join(dir, 'dot.png');
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#c04020' } })
      .png()
      .toFile(png);
    const r = await cli(['upscale-image', png, '-o', path.join(dir, 'dot.jpg')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `media-worker: ${path.join(dir, 'dot.jpg')}: the result is PNG, not JPEG; use -o ${path.join(dir, 'dot.png')}\n`,
    );
  });
});
