/**
 * The spec's reference charges end to end: media made by ffmpeg, probed by the real media layer,
 * priced by the jobs layer (spec 4.2: a 15.04 s video bills 16 s).
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { quoteOnly } from '../src/app/index.js';
import { parseJob } from '../src/jobs/index.js';
import { makeClip, makeTempDir, makeTone } from './media/helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
let video1504: string;
let video61: string;
let speech: string;
const config = loadConfig({});

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('media-worker-quote-media-'));
  // 376 frames at 25 fps: 15.04 s.
  video1504 = await makeClip(path.join(dir, 'talk.mp4'), { seconds: 15.04, rate: 25 });
  video61 = await makeClip(path.join(dir, 'long.mp4'), { seconds: 61, rate: 5, codec: ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'] });
  speech = await makeTone(path.join(dir, 'speech.mp3'), [], 3);
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
    await expect(quote({ model: 'vendor-video-upscale', input: { video_url: video61 } })).rejects.toMatchObject({ code: 'VIDEO_TOO_LONG', status: 422 });
    await expect(quote({ model: 'vendor-lipsync-2', input: { video_url: video61, audio_url: speech } })).rejects.toMatchObject({ code: 'VIDEO_TOO_LONG' });
  });

  it('refuses an audio file as the video of a lip-sync job with PROBE_FAILED', async () => {
    await expect(quote({ model: 'vendor-lipsync-2', input: { video_url: speech, audio_url: speech } })).rejects.toMatchObject({ code: 'PROBE_FAILED' });
  });
});
