/**
 * Clips of exactly the spec's maximum duration, made as a normal encoder makes them (ffmpeg `-t`,
 * AAC or Opus audio with its priming and padded last packet), are accepted and billed for their
 * length; files that really hold more (frames, or audio beyond its codec's framing) are still
 * refused with VIDEO_TOO_LONG. docs/contract.md, "The bill is what runs".
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { quoteOnly } from '../../src/app/index.js';
import {
  LIPSYNC_MAX_VIDEO_SECONDS,
  VIDEO_UPSCALE_MAX_SECONDS,
  parseJob,
  type LipsyncQuote,
  type VideoQuote,
} from '../../src/jobs/index.js';
import { ffmpeg, makeTempDir, makeTone } from '../media/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const config = loadConfig({});
const clips: Record<string, string> = {};
const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
const vp8 = ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8'];

/**
 * A clip in `name`'s container: `video` seconds of 30 fps picture (or `rate`), and `audio` seconds
 * of 48 kHz tone through `audioCodec` (none when `audio` is 0). Each source ends on its own, as a
 * camera's streams do, so a longer audio is really there; `out` adds output options (`-t`).
 */
async function clip(
  name: string,
  o: { video: number; audio: number; codec?: string[]; audioCodec?: string; rate?: string; out?: string[] },
): Promise<string> {
  const file = path.join(dir, name);
  const inputs = ['-f', 'lavfi', '-i', `testsrc2=size=64x36:rate=${o.rate ?? '30'}:duration=${o.video}`];
  if (o.audio > 0) inputs.push('-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${o.audio}`);
  await ffmpeg([
    ...inputs,
    ...(o.codec ?? x264),
    ...(o.audio > 0 ? ['-c:a', o.audioCodec ?? 'aac'] : []),
    ...(o.out ?? []),
    file,
  ]);
  return file;
}

const up = VIDEO_UPSCALE_MAX_SECONDS;
const lip = LIPSYNC_MAX_VIDEO_SECONDS;

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('quote-at-the-limit'));
  const made = await Promise.all([
    ['mkv-aac', clip('limit.mkv', { video: up, audio: up })],
    ['mp4-aac', clip('limit.mp4', { video: up, audio: up })],
    ['mov-aac', clip('limit.mov', { video: up, audio: up })],
    ['mp4-video-only', clip('limit-video-only.mp4', { video: up, audio: 0 })],
    // 29.97 fps cut at 60 s as `-t` cuts (and a camera stops): 1798 frames, the last ending at 59.993 s.
    ['mp4-ntsc', clip('limit-ntsc.mp4', { video: up + 1, audio: up + 1, rate: '30000/1001', out: ['-t', String(up)] })],
    // Every frame starting before 60 s: 1799 frames, the last shown until 60.027 s (as the headers say too).
    ['mp4-ntsc-frame-over', clip('ntsc-frame-over.mp4', { video: up, audio: up, rate: '30000/1001' })],
    ['mkv-frames-over', clip('frames-over.mkv', { video: up + 0.5, audio: up + 0.5 })],
    ['mp4-frames-over', clip('frames-over.mp4', { video: up + 1, audio: up + 1 })],
    ['mkv-audio-over', clip('audio-over.mkv', { video: up, audio: up + 0.2 })],
    ['webm-opus', clip('lip.webm', { video: lip, audio: lip, codec: vp8, audioCodec: 'libopus' })],
    ['mp4-lip', clip('lip.mp4', { video: lip, audio: lip })],
    [
      'webm-frames-over',
      clip('lip-frames-over.webm', { video: lip + 0.5, audio: lip + 0.5, codec: vp8, audioCodec: 'libopus' }),
    ],
    [
      'webm-audio-over',
      clip('lip-audio-over.webm', { video: lip, audio: lip + 0.2, codec: vp8, audioCodec: 'libopus' }),
    ],
    ['speech', makeTone(path.join(dir, 'speech.mp3'), [], 3)],
  ] as const);
  for (const [name, file] of made) clips[name] = await file;
}, 120_000);
afterAll(async () => cleanup());

const quote = (body: unknown) =>
  quoteOnly(parseJob(body), config, { taskId: 'quote-at-the-limit', allowLocalPaths: true });
const upscale = (name: string) =>
  quote({
    model: 'vendor-video-upscale',
    input: { video_url: clips[name], upscale_factor: '2' },
  }) as Promise<VideoQuote>;
const lipsync = (name: string) =>
  quote({
    model: 'vendor-lipsync-2',
    input: { video_url: clips[name], audio_url: clips['speech'] },
  }) as Promise<LipsyncQuote>;

describe(`video upscale at exactly ${up} s`, () => {
  it.each([
    ['mkv-aac', 'MKV, H.264 + AAC (the priming packet kept, the last one padded)', up * 30],
    ['mp4-aac', 'MP4, H.264 + AAC', up * 30],
    ['mov-aac', 'MOV, H.264 + AAC', up * 30],
    ['mp4-video-only', 'MP4, H.264 alone', up * 30],
    ['mp4-ntsc', 'MP4 at 29.97 fps, H.264 + AAC', Math.floor((up * 30000) / 1001)],
  ])(`%s (%s) is accepted and billed ${up} s, %i frames`, async (name, _what, frames) => {
    const q = await upscale(name);
    expect(q.input).toMatchObject({ billed_seconds: up, credits_per_second: 16 });
    expect(q.creditsUsed).toBe(up * 16);
    expect(q.estimated_frames).toBe(frames);
    // The audio's own span runs past the limit by its framing; the quote shows it, and the bill does not follow it.
    if (name !== 'mp4-video-only') expect(q.measured.video.audio?.seconds).toBeGreaterThanOrEqual(up);
  });

  it.each([
    ['mkv-frames-over', `${up + 0.5} s of frames (MKV)`],
    ['mp4-frames-over', `${up + 1} s of frames (MP4)`],
    ['mkv-audio-over', `${up} s of frames and ${up + 0.2} s of audio (MKV)`],
    ['mp4-ntsc-frame-over', '1799 frames at 29.97 fps, 60.027 s'],
  ])('%s (%s) is refused VIDEO_TOO_LONG', async (name) => {
    await expect(upscale(name)).rejects.toMatchObject({ code: 'VIDEO_TOO_LONG', status: 422 });
  });
});

describe(`lip-sync at exactly ${lip} s`, () => {
  it.each([
    ['webm-opus', 'WebM, VP8 + Opus (pre-skip before 0, the last packet padded)'],
    ['mp4-lip', 'MP4, H.264 + AAC'],
  ])('%s (%s) is accepted and billed 30 s', async (name) => {
    const q = await lipsync(name);
    expect(q).toMatchObject({ duration: lip, creditsUsed: lip * 10, input: { billed_seconds: lip } });
  });

  it.each([
    ['webm-frames-over', `${lip + 0.5} s of frames (WebM)`],
    ['webm-audio-over', `${lip} s of frames and ${lip + 0.2} s of audio (WebM)`],
  ])('%s (%s) is refused VIDEO_TOO_LONG', async (name) => {
    await expect(lipsync(name)).rejects.toMatchObject({ code: 'VIDEO_TOO_LONG', status: 422 });
  });
});
