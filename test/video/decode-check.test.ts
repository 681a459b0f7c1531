/**
 * The frame count measured at quote time (the video stream's packets, probeMedia) and the decode
 * check's count before any network work (checkVideoDecodes): real ffmpeg on clips it made, both
 * checked against the frames a full decode delivers; then the check's refusals.
 */
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowedFrames, probeMedia, resolveFfmpeg, resolveFfprobe, runProcess } from '../../src/media/index.js';
import { checkVideoDecodes, decodeCheckArgs, parseProgressFrames } from '../../src/video/index.js';
import { failure } from '../media/helpers.js';

let dir: string;
const ffmpeg = resolveFfmpeg();

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'decode-check-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Frames a full decode delivers (ffprobe -count_frames decodes every one). */
async function decodedFrames(file: string): Promise<number> {
  const { stdout } = await runProcess(resolveFfprobe(), [
    '-v',
    'error',
    '-select_streams',
    'V:0',
    '-count_frames',
    '-show_entries',
    'stream=nb_read_frames',
    '-of',
    'csv=p=0',
    file,
  ]);
  return Number.parseInt(stdout.toString('utf8'), 10);
}

async function clip(
  name: string,
  frames: number,
  codec: readonly string[] = ['-c:v', 'libx264', '-preset', 'veryfast'],
): Promise<string> {
  const file = path.join(dir, name);
  await runProcess(ffmpeg, [
    '-v',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'testsrc2=size=96x64:rate=25',
    '-frames:v',
    String(frames),
    ...codec,
    file,
  ]);
  return file;
}

describe('measured frames and the decode check', () => {
  it.each([
    ['mp4', 'mp4', ['-c:v', 'libx264', '-preset', 'veryfast', '-bf', '2'], 48],
    ['mov', 'mov', ['-c:v', 'libx264', '-preset', 'veryfast'], 30],
    ['mkv', 'mkv', ['-c:v', 'libx264', '-preset', 'veryfast'], 37],
    ['webm', 'webm', ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '500k'], 41],
    ['gif', 'gif', [], 12],
  ] as const)(
    'a %s clip: the probe measures the frames a decode delivers, and the check counts them',
    async (ext, container, codec, frames) => {
      const file = await clip(`clip.${ext}`, frames, codec);
      expect(await decodedFrames(file)).toBe(frames);
      const info = await probeMedia(file);
      expect(info.video?.frameCount).toBe(frames);
      expect(
        await checkVideoDecodes({
          ffmpeg,
          path: file,
          container,
          videoIndex: 0,
          maxFrames: allowedFrames(frames),
          strict: true,
        }),
      ).toBe(frames);
    },
  );

  it('refuses a file that grew after its quote, before any work: more frames than allowed', async () => {
    const file = await clip('grown.mp4', 60);
    const err = await failure(
      checkVideoDecodes({
        ffmpeg,
        path: file,
        container: 'mp4',
        videoIndex: 0,
        maxFrames: allowedFrames(20),
        strict: true,
      }),
    );
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toContain(`at most ${allowedFrames(20)} video frames, as quoted`);
  });

  it("refuses a bitstream damaged near its end (strict), with the decoder's reason", async () => {
    const file = await clip('damaged.mp4', 75);
    const damaged = path.join(dir, 'damaged-93.mp4');
    await copyFile(file, damaged);
    const { readFile } = await import('node:fs/promises');
    const bytes = await readFile(damaged);
    // Garbage over the last frames' data (the moov box is at the end: past mdat's 93 %).
    const mdat = bytes.indexOf(Buffer.from('mdat'));
    const end = bytes.indexOf(Buffer.from('moov'));
    const at = Math.floor(mdat + (end - mdat) * 0.9);
    for (let i = 0; i < 300; i += 1) bytes[at + i] = (i * 151 + 7) & 0xff;
    await writeFile(damaged, bytes);
    const err = await failure(
      checkVideoDecodes({ ffmpeg, path: damaged, container: 'mp4', videoIndex: 0, maxFrames: 200, strict: true }),
    );
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toMatch(/^The video could not be decoded: /);
  });

  it('refuses a file that is no video at all', async () => {
    const file = path.join(dir, 'junk.mp4');
    await writeFile(file, Buffer.from('not a video at all'));
    expect(
      (
        await failure(
          checkVideoDecodes({ ffmpeg, path: file, container: 'mp4', videoIndex: 0, maxFrames: 10, strict: false }),
        )
      ).code,
    ).toBe('PROBE_FAILED');
  });

  it('reads only the local file, with the sniffed demuxer, the chosen stream, one frame past the allowance', () => {
    const args = decodeCheckArgs({
      path: '/in/clip.mkv',
      container: 'mkv',
      videoIndex: 1,
      maxFrames: 40,
      strict: true,
    }).join(' ');
    expect(args).toContain('-protocol_whitelist file');
    expect(args).toContain('-f matroska -i file:/in/clip.mkv');
    expect(args).toContain('-map 0:V:1');
    expect(args).toContain('-frames:v 41');
    expect(args).toContain('-xerror');
    expect(args).toContain('-threads 1 -protocol_whitelist');
    expect(
      decodeCheckArgs({ path: '/in/clip.mkv', container: 'mkv', videoIndex: 0, maxFrames: 40, strict: false }),
    ).not.toContain('-xerror');
  });

  it('reads the last frame count of a progress report', () => {
    expect(parseProgressFrames('frame=3\nprogress=continue\nframe=12\nprogress=end\n')).toBe(12);
    expect(parseProgressFrames('progress=end\n')).toBeUndefined();
  });
});
