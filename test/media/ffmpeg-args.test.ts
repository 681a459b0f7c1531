import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findOnPath, resolveFfprobe } from '../../src/media/binaries.js';
import {
  MEDIA_DEMUXERS,
  demuxerFor,
  ffprobeArgs,
  fileInput,
  quietFfmpegArgs,
  rgbPipeInputArgs,
  rgbPipeOutputArgs,
  safeFileInputArgs,
  safeInputArgs,
} from '../../src/media/ffmpeg-args.js';
import { runProcess } from '../../src/media/process.js';
import type { ContainerKind } from '../../src/media/types.js';
import { makeClip, makeTempDir } from './helpers.js';

describe('argument builders', () => {
  it('whitelists file and pipe protocols and the accepted demuxers by default', () => {
    expect(safeInputArgs()).toEqual([
      '-protocol_whitelist',
      'file,pipe',
      '-format_whitelist',
      'mov,matroska,gif,mp3,wav,aac,ogg,flac',
    ]);
    expect(MEDIA_DEMUXERS).not.toContain('hls');
    expect(MEDIA_DEMUXERS).not.toContain('concat');
  });

  it('narrows the whitelists for a raw frame pipe', () => {
    expect(safeInputArgs({ demuxers: ['rawvideo'], protocols: ['pipe'] })).toEqual([
      '-protocol_whitelist',
      'pipe',
      '-format_whitelist',
      'rawvideo',
    ]);
  });

  it.each([
    [{ demuxers: [] }, 'Expected at least one demuxer but received none'],
    [{ demuxers: ['mov,hls'] }, 'Expected a plain demuxer name but received "mov,hls"'],
    [{ protocols: ['file', 'http '] }, 'Expected a plain protocol name but received "http "'],
  ])('refuses malformed whitelists %#', (opts, message) => {
    expect(() => safeInputArgs(opts)).toThrow(message);
  });

  it.each<[ContainerKind, string]>([
    ['mp4', 'mov'],
    ['mov', 'mov'],
    ['m4v', 'mov'],
    ['m4a', 'mov'],
    ['mkv', 'matroska'],
    ['webm', 'matroska'],
    ['gif', 'gif'],
    ['mp3', 'mp3'],
    ['wav', 'wav'],
    ['aac', 'aac'],
    ['ogg', 'ogg'],
  ])('reads %s with the %s demuxer', (container, demuxer) => {
    expect(demuxerFor(container)).toBe(demuxer);
  });

  it('forces the sniffed demuxer and names the file with an explicit file: URL', () => {
    expect(safeFileInputArgs('/tmp/-odd:name.mp4', 'mp4')).toEqual([
      '-protocol_whitelist',
      'file,pipe',
      '-format_whitelist',
      'mov',
      '-f',
      'mov',
      '-i',
      'file:/tmp/-odd:name.mp4',
    ]);
  });

  it('refuses relative paths', () => {
    expect(() => fileInput('clip.mp4')).toThrow(
      'Expected an absolute path for the media input but received "clip.mp4"',
    );
  });

  it('starts every pipeline ffmpeg quiet: no banner, no terminal, no stats, errors only', () => {
    expect(quietFfmpegArgs()).toEqual(['-hide_banner', '-nostdin', '-nostats', '-v', 'error']);
  });

  it('reads raw rgb24 frames from stdin, whitelisted to the pipe, with input options before -i', () => {
    expect(rgbPipeInputArgs({ width: 161, height: 90 }, '30000/1001', ['-itsoffset', '0.5'])).toEqual([
      '-protocol_whitelist',
      'pipe',
      '-format_whitelist',
      'rawvideo',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      '-video_size',
      '161x90',
      '-framerate',
      '30000/1001',
      '-itsoffset',
      '0.5',
      '-i',
      'pipe:0',
    ]);
    expect(rgbPipeInputArgs({ width: 2, height: 2 }, '25').slice(-4)).toEqual(['-framerate', '25', '-i', 'pipe:0']);
    expect(rgbPipeOutputArgs()).toEqual(['-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1']);
  });

  it('asks ffprobe for JSON with the format and every stream', () => {
    const args = ffprobeArgs('/data/a.webm', 'webm');
    expect(args.slice(args.indexOf('-i'), args.indexOf('-i') + 2)).toEqual(['-i', 'file:/data/a.webm']);
    expect(args).toEqual(
      expect.arrayContaining(['-print_format', 'json=compact=1', '-show_format', '-show_streams', '-f', 'matroska']),
    );
    // Every packet's timing: what the quote measures (stream-measure.ts); the benchmark's baseline reads headers only.
    expect(args.slice(args.indexOf('-show_entries'))).toEqual([
      '-show_entries',
      'packet=stream_index,pts_time,dts_time,duration_time,flags',
    ]);
    expect(ffprobeArgs('/data/a.webm', 'webm', true)).not.toContain('-show_entries');
  });
});

describe('the flags against the ffmpeg builds on this machine', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  const systemFfprobe = findOnPath('ffprobe');
  const probes = [...new Set([resolveFfprobe(), ...(systemFfprobe === undefined ? [] : [systemFfprobe])])];

  beforeAll(async () => {
    ({ dir, cleanup } = await makeTempDir('args'));
    await makeClip(join(dir, 'seg.ts'), { seconds: 0.4, extra: ['-f', 'mpegts'] });
    const playlist = (segment: string): string =>
      `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:0.4,\n${segment}\n#EXT-X-ENDLIST\n`;
    await writeFile(join(dir, 'real.m3u8'), playlist('seg.ts'));
    // A FIFO blocks whoever opens it for reading: a probe that finishes promptly never opened it.
    await promisify(execFile)('mkfifo', [join(dir, 'trap.ts')]);
    await writeFile(join(dir, 'trap.m3u8'), playlist('trap.ts'));
    await writeFile(join(dir, 'list.ffconcat'), `ffconcat version 1.0\nfile ${join(dir, 'trap.ts')}\n`);
  });

  afterAll(async () => {
    await cleanup();
  });

  it.skipIf(systemFfprobe === undefined)(
    'control: without the flags the system ffprobe follows a playlist to a local file',
    async () => {
      const { stdout } = await runProcess(
        systemFfprobe ?? 'ffprobe',
        ['-v', 'error', '-show_entries', 'format=format_name', '-of', 'csv=p=0', join(dir, 'real.m3u8')],
        {
          timeoutMs: 10_000,
        },
      );
      expect(stdout.toString().trim()).toBe('hls');
    },
  );

  it.each(probes)('%s refuses an HLS playlist and never opens the file it names', async (ffprobe) => {
    const started = Date.now();
    const failure = await runProcess(
      ffprobe,
      ['-v', 'error', ...safeInputArgs(), '-i', fileInput(join(dir, 'trap.m3u8'))],
      {
        timeoutMs: 10_000,
        killGraceMs: 100,
      },
    ).catch((err: unknown) => err);
    expect(failure).toMatchObject({ reason: 'exit' });
    expect((failure as { stderrTail: string }).stderrTail).toMatch(/not on whitelist/);
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it.each(probes)('%s refuses an ffconcat script', async (ffprobe) => {
    const failure = await runProcess(
      ffprobe,
      ['-v', 'error', ...safeInputArgs(), '-i', fileInput(join(dir, 'list.ffconcat'))],
      {
        timeoutMs: 10_000,
        killGraceMs: 100,
      },
    ).catch((err: unknown) => err);
    expect(failure).toMatchObject({ reason: 'exit' });
    expect((failure as { stderrTail: string }).stderrTail).toMatch(/not on whitelist/);
  });

  it.each(probes)('%s refuses network protocols', async (ffprobe) => {
    const failure = await runProcess(
      ffprobe,
      ['-v', 'error', ...safeInputArgs(), '-i', 'http://127.0.0.1:9/clip.mp4'],
      {
        timeoutMs: 10_000,
      },
    ).catch((err: unknown) => err);
    expect((failure as { stderrTail: string }).stderrTail).toMatch(/Protocol 'http' not on whitelist/);
  });
});
