/**
 * The spec's reference charges end to end: media made by ffmpeg, probed by the real media layer,
 * priced by the jobs layer (spec 4.2: a 15.04 s video bills 16 s).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { quoteOnly } from '../../src/app/index.js';
import { parseJob } from '../../src/jobs/index.js';
import { ffmpeg, makeClip, makeTempDir, makeTone } from '../media/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
let video1504: string;
let video61: string;
let speech: string;
let audioPastVideo: string;
const config = loadConfig({});

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('media-worker-quote-media-'));
  // 376 frames at 25 fps: 15.04 s.
  video1504 = await makeClip(path.join(dir, 'talk.mp4'), { seconds: 15.04, rate: 25 });
  video61 = await makeClip(path.join(dir, 'long.mp4'), {
    seconds: 61,
    rate: 5,
    codec: ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'],
  });
  speech = await makeTone(path.join(dir, 'speech.mp3'), [], 3);
  // 8 s of frames whose own audio track runs 10 s.
  audioPastVideo = path.join(dir, 'audio-past-video.mp4');
  await ffmpeg([
    ...[
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=32x32:rate=5:duration=8',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=22050:duration=10',
    ],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', audioPastVideo],
  ]);
});
afterAll(async () => cleanup());

const quote = (body: unknown) => quoteOnly(parseJob(body), config, { taskId: 'quote-media', allowLocalPaths: true });

describe('quote on real media', () => {
  it.each([
    ['vendor-lipsync-2', 160],
    ['vendor-lipsync-2-pro', 320],
    ['vendor-lipsync-3', 480],
  ])('bills a 15.04 s video as 16 s for %s: %i credits', async (model, credits) => {
    const q = await quote({ model, input: { video_url: video1504, audio_url: speech } });
    expect(q).toMatchObject({ model, creditsUsed: credits, duration: 15.04, input: { billed_seconds: 16 } });
  });

  it.each([
    ['1', 256],
    ['2', 256],
    ['4', 448],
  ])('prices video upscale x%s of 15.04 s at %i credits', async (factor, credits) => {
    const q = await quote({ model: 'vendor-video-upscale', input: { video_url: video1504, upscale_factor: factor } });
    expect(q).toMatchObject({ creditsUsed: credits, input: { detected_duration: '15.04s', billed_seconds: 16 } });
  });

  it('refuses a 61 s video for upscaling with VIDEO_TOO_LONG and for lip-sync too', async () => {
    await expect(quote({ model: 'vendor-video-upscale', input: { video_url: video61 } })).rejects.toMatchObject({
      code: 'VIDEO_TOO_LONG',
      status: 422,
    });
    await expect(
      quote({ model: 'vendor-lipsync-2', input: { video_url: video61, audio_url: speech } }),
    ).rejects.toMatchObject({ code: 'VIDEO_TOO_LONG' });
  });

  it("bills a lip-sync the video stream's 8 s, not its own audio's 10 s; a video upscale of the same file bills 10 s", async () => {
    const lip = await quote({
      model: 'vendor-lipsync-2',
      input: { video_url: audioPastVideo, audio_url: speech, sync_mode: 'loop' },
    });
    expect(lip).toMatchObject({ creditsUsed: 80, duration: 8, input: { billed_seconds: 8 } });
    expect(
      (lip as { measured: { video: { audio?: { seconds: number } } } }).measured.video.audio?.seconds,
    ).toBeGreaterThanOrEqual(10);
    const up = await quote({
      model: 'vendor-video-upscale',
      input: { video_url: audioPastVideo, upscale_factor: '2' },
    });
    expect(up).toMatchObject({ creditsUsed: 160, input: { billed_seconds: 10 } });
  });

  it('refuses an audio file as the video of a lip-sync job with PROBE_FAILED', async () => {
    await expect(
      quote({ model: 'vendor-lipsync-2', input: { video_url: speech, audio_url: speech } }),
    ).rejects.toMatchObject({ code: 'PROBE_FAILED' });
  });
});
