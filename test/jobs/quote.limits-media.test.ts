/**
 * The work limits end to end: clips made by ffmpeg, probed by the real media layer, refused (or
 * estimated) by the quote with the policy built from the settings, as `media-worker quote` does.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { quoteOnly } from '../../src/app/index.js';
import { parseJob, SYNC_MODES } from '../../src/jobs/index.js';
import { timeLimitsFromEnv } from '../../src/app/index.js';
import { makeClip, makeTempDir, makeTone } from '../media/helpers.js';

let cleanup: () => Promise<void>;
let hfr: string;
let uhd: string;
let small: string;
let longAudio: string;
const config = loadConfig({}, { hardwareClass: 'cpu', threads: '2' });

beforeAll(async () => {
  let dir: string;
  ({ dir, cleanup } = await makeTempDir('quote-limits'));
  hfr = await makeClip(path.join(dir, 'hfr.mp4'), { seconds: 0.5, rate: 240, size: '160x90' });
  uhd = await makeClip(path.join(dir, 'uhd.mp4'), { seconds: 0.2, rate: 10, size: '3840x2160' });
  small = await makeClip(path.join(dir, 'small.mp4'), { seconds: 2, rate: 25, size: '64x48' });
  longAudio = await makeTone(path.join(dir, 'long.mp3'), [], 120);
});
afterAll(async () => cleanup());

const quote = (body: unknown, timeLimitsMs = timeLimitsFromEnv({})) =>
  quoteOnly(parseJob(body), config, { taskId: 'quote-limits', allowLocalPaths: true, timeLimitsMs });

describe('quote refuses work the price does not cover (real media)', () => {
  it('a 240 fps clip at factor "4": FRAME_RATE_TOO_HIGH naming the rate', async () => {
    await expect(
      quote({ model: 'vendor-video-upscale', input: { video_url: hfr, upscale_factor: '4' } }),
    ).rejects.toMatchObject({
      code: 'FRAME_RATE_TOO_HIGH',
      status: 422,
      message: 'Expected the video frame rate to be at most 60 fps but received 240 fps (240/1)',
    });
  });

  it('4K at factor "4": OUTPUT_TOO_LARGE; at factor "1" it passes the size limits', async () => {
    await expect(
      quote({ model: 'vendor-video-upscale', input: { video_url: uhd, upscale_factor: '4' } }),
    ).rejects.toMatchObject({
      code: 'OUTPUT_TOO_LARGE',
      message: expect.stringContaining('15360×8640 from 3840×2160 at factor "4"'),
    });
    const q = await quote({ model: 'vendor-video-upscale', input: { video_url: uhd, upscale_factor: '1' } });
    expect(q).toMatchObject({ estimated_frames: 2, hardware_class: 'cpu' });
  });

  it.each(SYNC_MODES.filter((m) => m !== 'cut_off'))(
    'lip-sync %s with 120 s of audio under a 2 s video: AUDIO_TOO_LONG',
    async (mode) => {
      await expect(
        quote({ model: 'vendor-lipsync-2', input: { video_url: small, audio_url: longAudio, sync_mode: mode } }),
      ).rejects.toMatchObject({
        code: 'AUDIO_TOO_LONG',
        message: expect.stringContaining('at most 10 seconds (200 % of the 5 s the credits cover) but received 120'),
      });
    },
  );

  it('lip-sync cut_off with the same audio is accepted: 2 s of output at 25 fps', async () => {
    const q = await quote({
      model: 'vendor-lipsync-2',
      input: { video_url: small, audio_url: longAudio, sync_mode: 'cut_off' },
    });
    expect(q).toMatchObject({ creditsUsed: 50, estimated_frames: 50, hardware_class: 'cpu' });
  });

  it('an accepted video shows frames = duration x rate, and a tighter watchdog refuses it', async () => {
    const body = { model: 'vendor-video-upscale', input: { video_url: small, upscale_factor: '2' } };
    const q = await quote(body);
    expect(q).toMatchObject({ estimated_frames: 50 });
    const seconds = (q as { estimated_seconds: number }).estimated_seconds;
    expect(seconds).toBeGreaterThan(0);
    // A video limit whose 80 % is just under the estimate.
    const videoMs = Math.floor(((seconds - 0.1) / 0.8) * 1000);
    await expect(quote(body, { ...timeLimitsFromEnv({}), video: videoMs })).rejects.toMatchObject({
      code: 'JOB_TOO_COSTLY',
    });
  });

  it('the watchdog comes from WORKER_WATCHDOG_MS, parsed as the daemon parses it', () => {
    expect(timeLimitsFromEnv({ WORKER_WATCHDOG_MS: 'video=1000' })).toMatchObject({ video: 1000, image: 15 * 60_000 });
    expect(() => timeLimitsFromEnv({ WORKER_WATCHDOG_MS: 'video=soon' })).toThrow();
  });
});
