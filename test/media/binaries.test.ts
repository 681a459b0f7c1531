import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOnPath, resolveFfmpeg, resolveFfprobe } from '../../src/media/binaries.js';
import { runProcess } from '../../src/media/process.js';
import { makeTempDir } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('bin'));
  await writeFile(join(dir, 'ffmpeg'), '#!/bin/sh\necho fake\n');
  await chmod(join(dir, 'ffmpeg'), 0o755);
  await writeFile(join(dir, 'not-executable'), 'x');
});
afterAll(async () => {
  await cleanup();
});

describe('resolveFfprobe', () => {
  it('finds a working ffprobe (the npm-shipped one when present)', async () => {
    const path = resolveFfprobe();
    const { stdout } = await runProcess(path, ['-version']);
    expect(stdout.toString()).toMatch(/^ffprobe version/);
  });

  it('uses an explicit path, and words a bad one clearly', () => {
    expect(resolveFfprobe({ ffprobePath: join(dir, 'ffmpeg') })).toBe(join(dir, 'ffmpeg'));
    expect(() => resolveFfprobe({ ffprobePath: join(dir, 'not-executable') })).toThrow(
      `Expected an executable file for the ffprobe path but received "${join(dir, 'not-executable')}"`,
    );
  });
});

describe('resolveFfmpeg', () => {
  it('prefers FFMPEG_PATH', () => {
    expect(resolveFfmpeg({ ffmpegPath: join(dir, 'ffmpeg') })).toBe(join(dir, 'ffmpeg'));
  });

  it('names the setting when FFMPEG_PATH is wrong', () => {
    expect(() => resolveFfmpeg({ ffmpegPath: '/nonexistent/ffmpeg' })).toThrow(
      'Expected an executable file for FFMPEG_PATH but received "/nonexistent/ffmpeg"',
    );
    expect(() => resolveFfmpeg({ ffmpegPath: dir })).toThrow('Expected an executable file for FFMPEG_PATH');
  });

  it('falls back to the PATH, skipping relative entries and non-executables', () => {
    expect(resolveFfmpeg({ searchPath: ['relative/bin', join(dir, 'nowhere'), dir].join(':') })).toBe(
      join(dir, 'ffmpeg'),
    );
    expect(findOnPath('not-executable', dir)).toBeUndefined();
  });

  it('says how to fix a missing ffmpeg', () => {
    expect(() => resolveFfmpeg({ searchPath: join(dir, 'nowhere') })).toThrow(
      'ffmpeg was not found on the PATH: install ffmpeg or set FFMPEG_PATH to its executable',
    );
  });
});
