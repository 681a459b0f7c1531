/**
 * `-fps_mode` or `-vsync` by the ffmpeg in use (src/video/ffmpeg-version.ts): the static ffmpeg 4.x
 * npm ships for a bare GPU host knows only `-vsync`. The pure rule, then the version read from a
 * real binary and from a stand-in that reports 4.4.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveFfmpeg } from '../../src/media/index.js';
import {
  argsForFfmpeg,
  decoderArgs,
  ffmpegVersion,
  frameTimingOption,
  frameTimingOptionOf,
  parseFfmpegVersion,
  withFrameTimingOption,
} from '../../src/video/index.js';
import { makeTempDir } from '../media/helpers.js';

describe('frameTimingOption', () => {
  it.each([
    [
      'ffmpeg version 5.1.9-0+deb12u1 Copyright (c) 2000-2026 the FFmpeg developers',
      { major: 5, minor: 1 },
      '-fps_mode',
    ],
    ['ffmpeg version n6.1.1 Copyright (c) 2000-2023', { major: 6, minor: 1 }, '-fps_mode'],
    ['ffmpeg version 7.0-static https://johnvansickle.com/ffmpeg/', { major: 7, minor: 0 }, '-fps_mode'],
    ['ffmpeg version 5.0.1 Copyright (c) 2000-2022', { major: 5, minor: 0 }, '-vsync'],
    ['ffmpeg version 4.4.1-static Copyright (c) 2000-2021', { major: 4, minor: 4 }, '-vsync'],
    ['ffmpeg version 4.1.4-1~deb10u1', { major: 4, minor: 1 }, '-vsync'],
    // A git build has no release number: newer than any release.
    ['ffmpeg version N-112345-gdeadbeef Copyright (c) 2000-2024', undefined, '-fps_mode'],
    ['not ffmpeg at all', undefined, '-fps_mode'],
  ])('%s -> %s', (text, version, option) => {
    expect(parseFfmpegVersion(text)).toEqual(version);
    expect(frameTimingOption(parseFfmpegVersion(text))).toBe(option);
  });

  it('renames the option only, keeping its value', () => {
    expect(withFrameTimingOption(['-i', 'x', '-fps_mode', 'passthrough', '-r', '30'], '-vsync')).toEqual([
      '-i',
      'x',
      '-vsync',
      'passthrough',
      '-r',
      '30',
    ]);
    expect(withFrameTimingOption(['-fps_mode', 'cfr'], '-fps_mode')).toEqual(['-fps_mode', 'cfr']);
  });
});

describe('the ffmpeg in use', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, cleanup } = await makeTempDir('ffmpeg-version'));
  });
  afterAll(async () => cleanup());

  it('reads this host`s ffmpeg (5.1 or later here) and keeps -fps_mode', async () => {
    const ffmpeg = resolveFfmpeg();
    const version = await ffmpegVersion(ffmpeg);
    expect(version === undefined || frameTimingOption(version) === '-fps_mode').toBe(true);
    expect(frameTimingOptionOf(ffmpeg)).toBe('-fps_mode');
  });

  it('gives an ffmpeg 4.4 -vsync in the decoder`s arguments, and remembers it for spawns that cannot wait', async () => {
    const old = join(dir, 'ffmpeg-4.4');
    await writeFile(
      old,
      '#!/bin/sh\necho "ffmpeg version 4.4.1-static https://johnvansickle.com/ffmpeg/  Copyright (c) 2000-2021"\n',
    );
    await chmod(old, 0o755);
    const args = decoderArgs({
      inputPath: '/in/clip.mp4',
      container: 'mp4',
      geometry: { decoded: { width: 64, height: 48 } },
      timing: { mode: 'passthrough', rate: { num: 25, den: 1 } },
      matrix: 'bt709',
    });
    const adapted = await argsForFfmpeg(old, args);
    expect(adapted).not.toContain('-fps_mode');
    expect(adapted[adapted.indexOf('-vsync') + 1]).toBe('passthrough');
    expect(frameTimingOptionOf(old)).toBe('-vsync');
  });
});
