/**
 * Music from the built command line (dist/) with the generated MusicGen TEST model: `run` with a
 * job JSON and the `music` command both print the completed task with two songs whose MP3s ffprobe
 * accepts; without a backend the job fails with GENERATION_FAILED and exit status 2.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../../src/paths.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
let dir: string;

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, timeout: 120_000 },
      (err, stdout, stderr) => {
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
      },
    );
  });
}

function codec(file: string): string {
  return execFileSync(
    'ffprobe',
    ['-v', 'error', '-show_entries', 'stream=codec_name:format=format_name', '-of', 'csv=p=0', file],
    { encoding: 'utf8' },
  )
    .trim()
    .replace(/\s+/g, ' ');
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-cli-music-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const musicEnv = (): NodeJS.ProcessEnv => ({
  MEDIA_WORKER_MUSIC_BACKENDS: 'musicgen',
  MEDIA_WORKER_MUSICGEN_MODEL: path.join(dir, 'musicgen-test'),
  MEDIA_WORKER_MUSIC_SECONDS: '1',
});

describe('music from the command line', () => {
  it('run completes a music job into a directory with two MP3s and two covers', async () => {
    const out = path.join(dir, 'run-out');
    const job = JSON.stringify({
      id: 'cli-music-1',
      model: 'vendor-v5-generate-music',
      input: { prompt: 'soft jazz piano', instrumental: true },
    });
    const r = await cli(['run', job, '-o', out], musicEnv());
    expect(r.stderr).not.toContain('"level":50');
    expect(r.code).toBe(0);
    const task = JSON.parse(r.stdout) as {
      model: string;
      status: string;
      creditsUsed: number;
      result: { songs: { audio_url: string; duration: number; title: string }[] };
    };
    expect(task).toMatchObject({ model: 'vendor/generate-music', status: 'completed', creditsUsed: 15 });
    expect(task.result.songs).toHaveLength(2);
    expect(task.result.songs.map((s) => [s.duration, s.title])).toEqual([
      [1, 'Soft jazz piano'],
      [1, 'Soft jazz piano'],
    ]);
    expect((await readdir(out)).sort()).toEqual([
      'cli-music-1-cover-1.jpg',
      'cli-music-1-cover-2.jpg',
      'cli-music-1-song-1.mp3',
      'cli-music-1-song-2.mp3',
    ]);
    expect(codec(path.join(out, 'cli-music-1-song-2.mp3'))).toBe('mp3 mp3');
  });

  it('the music command takes custom fields and --seconds', async () => {
    const out = path.join(dir, 'music-out');
    const r = await cli(
      ['music', '--title', 'Rain', '--style', 'Ambient, Piano', '--instrumental', '--seconds', '1', '-o', out],
      musicEnv(),
    );
    expect(r.code).toBe(0);
    const task = JSON.parse(r.stdout) as {
      mediaType: string;
      result: { songs: { title: string; tags: string; prompt: string }[] };
    };
    expect(task.mediaType).toBe('music');
    expect(task.result.songs[0]).toMatchObject({ title: 'Rain', tags: 'ambient, piano', prompt: '' });
    expect(r.stderr).toContain('musicgen: generating');
  });

  it('fails with GENERATION_FAILED and exit 2 without a backend, and for lyrics the backend cannot sing', async () => {
    const lyrics = path.join(dir, 'lyrics.txt');
    await writeFile(lyrics, '[Verse]\nla la\n');
    const none = await cli(['music', '--prompt', 'pop'], { MEDIA_WORKER_MUSIC_BACKENDS: '' });
    expect(none.code).toBe(2);
    expect(JSON.parse(none.stdout)).toMatchObject({
      error: {
        code: 'GENERATION_FAILED',
        status: 500,
        message: expect.stringContaining('No music backend is configured'),
      },
    });
    const sung = await cli(['music', '--title', 'T', '--style', 'pop', '--lyrics', lyrics, '-o', dir], musicEnv());
    expect(sung.code).toBe(2);
    expect(JSON.parse(sung.stdout)).toMatchObject({
      error: { code: 'GENERATION_FAILED', message: 'No music backend can serve this job: musicgen cannot sing lyrics' },
    });
  });
});
