/**
 * Hardware encoder detection: listed by `ffmpeg -encoders` AND able to encode a frame, else libx264
 * with one log line. Stand-in ffmpeg scripts play the host with and without a working encoder.
 */
import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_ENCODER,
  checkEncoder,
  chooseEncoder,
  clearEncoderChecks,
  parseEncoderList,
  trialEncodeArgs,
} from '../../src/video/index.js';
import { makeTempDir } from '../media/helpers.js';

const LISTING = `Encoders:
 V..... = Video
 A..... = Audio
 ------
 V....D libx264              libx264 H.264 / AVC / MPEG-4 AVC / MPEG-4 part 10 (codec h264)
 V....D h264_nvenc           NVIDIA NVENC H.264 encoder (codec h264)
 A....D aac                  AAC (Advanced Audio Coding)
`;

let dir: string;
let cleanup: () => Promise<void>;

/** A stand-in ffmpeg: prints the listing for -encoders; the trial exits with `trialCode`. */
async function fakeFfmpeg(name: string, listing: string, trialCode: number): Promise<string> {
  const path = join(dir, name);
  const script = [
    '#!/bin/sh',
    'for a in "$@"; do if [ "$a" = "-encoders" ]; then cat <<\'EOF\'',
    listing.trimEnd(),
    'EOF',
    'exit 0; fi; done',
    'echo "[h264_nvenc @ 0x1] Cannot load libcuda.so.1" >&2',
    `exit ${trialCode}`,
  ].join('\n');
  await writeFile(path, `${script}\n`);
  await chmod(path, 0o755);
  return path;
}

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('video-encoders'));
});
afterAll(async () => {
  await cleanup();
});
beforeEach(() => clearEncoderChecks());

describe('parseEncoderList', () => {
  it('reads the encoder names and skips the legend', () => {
    expect([...parseEncoderList(LISTING)]).toEqual(['libx264', 'h264_nvenc', 'aac']);
  });
});

describe('chooseEncoder', () => {
  const nvenc = { ...DEFAULT_ENCODER, codec: 'h264_nvenc' as const };

  it('keeps a hardware encoder that is listed and encodes a trial frame', async () => {
    const ffmpeg = await fakeFfmpeg('ffmpeg-ok', LISTING, 0);
    const warnings: string[] = [];
    expect(await chooseEncoder(ffmpeg, nvenc, { info: () => {}, warn: (_, m) => warnings.push(m) })).toEqual(nvenc);
    expect(warnings).toEqual([]);
  });

  it('falls back to libx264 with one log line when the trial fails (listed, but no driver)', async () => {
    const ffmpeg = await fakeFfmpeg('ffmpeg-nodriver', LISTING, 1);
    const warnings: { obj: object; msg: string }[] = [];
    const chosen = await chooseEncoder(ffmpeg, nvenc, {
      info: () => {},
      warn: (obj, msg) => warnings.push({ obj, msg }),
    });
    expect(chosen).toEqual({ ...nvenc, codec: 'libx264' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.msg).toBe(
      'video encoder h264_nvenc is not usable here (a trial encode failed: [h264_nvenc @ 0x1] Cannot load libcuda.so.1); encoding with libx264',
    );
  });

  it('falls back when this ffmpeg was built without it', async () => {
    const ffmpeg = await fakeFfmpeg('ffmpeg-without', LISTING.replace(/.*h264_nvenc.*\n/, ''), 0);
    expect(await checkEncoder(ffmpeg, nvenc)).toEqual({
      usable: false,
      reason: 'this ffmpeg was built without h264_nvenc',
    });
  });

  it('never checks libx264 and caches a verdict per binary and encoder', async () => {
    expect(await checkEncoder('/nonexistent/ffmpeg', DEFAULT_ENCODER)).toEqual({ usable: true });
    const ffmpeg = await fakeFfmpeg('ffmpeg-cached', LISTING, 0);
    const first = checkEncoder(ffmpeg, nvenc);
    expect(checkEncoder(ffmpeg, nvenc)).toBe(first);
  });

  it('trials the encoder with the options the pipeline will use', () => {
    const args = trialEncodeArgs(nvenc);
    expect(args).toContain('h264_nvenc');
    expect(args.slice(-3)).toEqual(['-f', 'null', '-']);
  });
});
