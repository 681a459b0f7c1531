import { describe, expect, it } from 'vitest';
import { JobError } from '../../src/errors.js';
import { quoteJob } from '../../src/jobs/quote.js';
import type { QuoteDeps } from '../../src/jobs/quote-types.js';
import { parseJob } from '../../src/jobs/schemas.js';
import {
  DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT,
  SYNC_MODES,
  type QuotePolicy,
  type SyncMode,
} from '../../src/jobs/index.js';
import { DEFAULT_WORK_LIMITS } from '../../src/jobs/work-limits.js';
import type { ImageInfo, MediaInfo } from '../../src/media/index.js';

import { HAND, NET } from './hand-profile.js';

function policy(overrides: Partial<QuotePolicy> = {}): QuotePolicy & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    limits: DEFAULT_WORK_LIMITS,
    hardware: HAND,
    // Lip-sync at 0.5 s per frame on the hand profile.
    kinds: { lipsync: { maxOutputPercent: DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT, secondsPerFrame: 0.5 } },
    // 80 % of 100 s: estimates up to 80 s pass
    timeLimitSeconds: { image: 100, video: 100, lipsync: 100, music: 100, 'music-video': 100 },
    srNetwork: async (kind, factor) => {
      asked.push(`${kind} ${factor}`);
      return { ...NET, scale: factor === '4' ? 4 : 2 };
    },
    ...overrides,
  };
}

function video(
  seconds: number,
  width: number,
  height: number,
  fps: { num: number; den: number },
  rotation = 0,
): MediaInfo {
  return {
    container: 'mp4',
    formatName: 'mov,mp4',
    durationSeconds: seconds,
    video: { codec: 'h264', width, height, rotation, fps, variableFrameRate: false },
  };
}

function audio(seconds: number): MediaInfo {
  return {
    container: 'mp3',
    formatName: 'mp3',
    durationSeconds: seconds,
    audio: { codec: 'mp3', sampleRate: 44100, channels: 1 },
  };
}

function deps(files: Record<string, MediaInfo | ImageInfo>): QuoteDeps {
  return {
    localize: async (source) => ({ path: source, bytes: 1, source }),
    probeMedia: async (path) => files[path] as MediaInfo,
    probeImage: async (path) => files[path] as ImageInfo,
  };
}

const VID = 'https://media.example/clip.mp4';
const AUD = 'https://media.example/voice.mp3';
const IMG = 'https://media.example/photo.png';

function videoJob(factor: '1' | '2' | '4' = '2') {
  return parseJob({ model: 'vendor-video-upscale', input: { video_url: VID, upscale_factor: factor } });
}

async function refusal(promise: Promise<unknown>): Promise<JobError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof JobError) return err;
    throw err;
  }
  throw new Error('expected a refusal, but the quote succeeded');
}

describe('quote with a policy: never accept what cannot finish', () => {
  it('a job just inside the limit is accepted and shows its estimate', async () => {
    // 8.0 s at 10 fps: 80 frames of 1 s each = 80 s, exactly 80 % of the 100 s limit
    const p = policy();
    const quoted = await quoteJob(videoJob(), deps({ [VID]: video(8, 64, 64, { num: 10, den: 1 }) }), undefined, p);
    expect(quoted.quote).toMatchObject({
      estimated_frames: 80,
      estimated_seconds: 80,
      hardware_class: 'cpu',
      creditsUsed: 8 * 16,
    });
    expect(p.asked).toEqual(['video 2']);
  });

  it('a job just outside the limit is refused at quote time', async () => {
    // 8.1 s at 10 fps: 81 frames, 81 s
    const err = await refusal(
      quoteJob(videoJob(), deps({ [VID]: video(8.1, 64, 64, { num: 10, den: 1 }) }), undefined, policy()),
    );
    expect(err.code).toBe('JOB_TOO_COSTLY');
    expect(err.message).toBe(
      'Expected the estimated processing time on cpu to be at most 80 seconds (80 % of the 100 s limit) but received 81 seconds',
    );
  });

  it("the limit is the kind's: the same job passes with a longer video limit", async () => {
    const p = policy({ timeLimitSeconds: { image: 100, video: 102, lipsync: 100, music: 100, 'music-video': 100 } });
    const quoted = await quoteJob(videoJob(), deps({ [VID]: video(8.1, 64, 64, { num: 10, den: 1 }) }), undefined, p);
    expect(quoted.quote).toMatchObject({ estimated_frames: 81, estimated_seconds: 81 });
  });

  it('an image is held to the image limit', async () => {
    const image: ImageInfo = {
      format: 'png',
      width: 64,
      height: 64,
      channels: 3,
      hasAlpha: false,
      bitDepth: 8,
      orientation: 1,
      hasIccProfile: false,
    };
    const job = parseJob({ model: 'vendor-image-upscale', input: { image_url: IMG, upscale_factor: '4' } });
    const ok = await quoteJob(job, deps({ [IMG]: image }), undefined, policy());
    expect(ok.quote).toMatchObject({ estimated_frames: 1, estimated_seconds: 1 });
    const tight = policy({ timeLimitSeconds: { image: 1, video: 100, lipsync: 100, music: 100, 'music-video': 100 } });
    expect((await refusal(quoteJob(job, deps({ [IMG]: image }), undefined, tight))).code).toBe('JOB_TOO_COSTLY');
  });

  it("without a policy the quote is the spec's alone (no estimate fields)", async () => {
    const quoted = await quoteJob(videoJob(), deps({ [VID]: video(8.1, 64, 64, { num: 10, den: 1 }) }));
    expect(quoted.quote).not.toHaveProperty('estimated_seconds');
  });
});

describe('quote with a policy: the work limits', () => {
  it('the issue\'s attack, 2 s of 1080p at 240 fps at factor "4", is FRAME_RATE_TOO_HIGH', async () => {
    const err = await refusal(
      quoteJob(videoJob('4'), deps({ [VID]: video(2, 1920, 1080, { num: 240, den: 1 }) }), undefined, policy()),
    );
    expect(err.code).toBe('FRAME_RATE_TOO_HIGH');
  });

  it('a variable frame rate is limited and counted at its highest rate, which it runs at', async () => {
    const vfr = (cfr: number): MediaInfo => {
      const info = video(2, 32, 32, { num: 30, den: 1 });
      return { ...info, video: { ...info.video!, variableFrameRate: true, cfrRate: { num: cfr, den: 1 } } };
    };
    const err = await refusal(quoteJob(videoJob('2'), deps({ [VID]: vfr(240) }), undefined, policy()));
    expect(err.code).toBe('FRAME_RATE_TOO_HIGH');
    const q = await quoteJob(videoJob('2'), deps({ [VID]: vfr(60) }), undefined, policy());
    expect((q.quote as { estimated_frames?: number }).estimated_frames).toBe(120);
  });

  it('4K at factor "4" is OUTPUT_TOO_LARGE before any network is looked up', async () => {
    const p = policy();
    const err = await refusal(
      quoteJob(videoJob('4'), deps({ [VID]: video(2, 3840, 2160, { num: 30, den: 1 }) }), undefined, p),
    );
    expect(err.code).toBe('OUTPUT_TOO_LARGE');
    expect(p.asked).toEqual([]);
  });

  it('an input over 8192 px is VIDEO_TOO_LARGE, measured upright (rotation applied)', async () => {
    const rotated = video(2, 100, 8200, { num: 30, den: 1 }, 90);
    const err = await refusal(quoteJob(videoJob('1'), deps({ [VID]: rotated }), undefined, policy()));
    expect(err.code).toBe('VIDEO_TOO_LARGE');
    expect(err.message).toContain('(8200×100)');
  });

  it("the spec's duration limit still comes first", async () => {
    const err = await refusal(
      quoteJob(videoJob('4'), deps({ [VID]: video(61, 1920, 1080, { num: 240, den: 1 }) }), undefined, policy()),
    );
    expect(err.code).toBe('VIDEO_TOO_LONG');
  });

  it('total output pixels of a job are limited', async () => {
    const p = policy({ limits: { ...DEFAULT_WORK_LIMITS, videoMaxJobOutputPixels: 80 * 128 * 128 } });
    expect(
      (await quoteJob(videoJob(), deps({ [VID]: video(8, 64, 64, { num: 10, den: 1 }) }), undefined, p)).quote,
    ).toMatchObject({ estimated_frames: 80 });
    expect(
      (await refusal(quoteJob(videoJob(), deps({ [VID]: video(8.1, 64, 64, { num: 10, den: 1 }) }), undefined, p)))
        .code,
    ).toBe('OUTPUT_TOO_LARGE');
  });
});

describe('quote with a policy: lip-sync output length per sync mode', () => {
  const lipsync = (mode: SyncMode) =>
    parseJob({ model: 'vendor-lipsync-2', input: { video_url: VID, audio_url: AUD, sync_mode: mode } });
  // 5 s of video: 50 credits (the minimum), which covers 5 s; the output may run 10 s.
  const files = (audioSeconds: number) =>
    deps({ [VID]: video(5, 64, 64, { num: 10, den: 1 }), [AUD]: audio(audioSeconds) });

  it.each(SYNC_MODES.filter((m) => m !== 'cut_off'))('%s with 120 s of audio: AUDIO_TOO_LONG', async (mode) => {
    const err = await refusal(quoteJob(lipsync(mode), files(120), undefined, policy()));
    expect(err.code).toBe('AUDIO_TOO_LONG');
    expect(err.message).toContain(`sync_mode "${mode}"`);
    expect(err.message).toContain('but received 120 seconds');
  });

  it('cut_off with 120 s of audio runs as long as the video', async () => {
    const quoted = await quoteJob(lipsync('cut_off'), files(120), undefined, policy());
    expect(quoted.quote).toMatchObject({ estimated_frames: 50, estimated_seconds: 25 });
  });

  it('loop with 10 s of audio (twice the covered 5 s) passes and estimates 100 output frames', async () => {
    const quoted = await quoteJob(lipsync('loop'), files(10), undefined, policy());
    expect(quoted.quote).toMatchObject({ estimated_frames: 100, estimated_seconds: 50 });
  });

  it('a lip-sync estimate over its limit is JOB_TOO_COSTLY', async () => {
    const p = policy({ timeLimitSeconds: { image: 100, video: 100, lipsync: 60, music: 100, 'music-video': 100 } });
    // 100 frames x 0.5 s = 50 s > 48 s (80 % of 60)
    expect((await refusal(quoteJob(lipsync('loop'), files(10), undefined, p))).code).toBe('JOB_TOO_COSTLY');
  });

  it('a lip-sync video above the frame-rate limit is refused before the audio is fetched', async () => {
    const fetched: string[] = [];
    const d = deps({ [VID]: video(5, 64, 64, { num: 120, den: 1 }), [AUD]: audio(5) });
    const watched: QuoteDeps = { ...d, localize: async (s, k) => (fetched.push(k), d.localize(s, k)) };
    expect((await refusal(quoteJob(lipsync('loop'), watched, undefined, policy()))).code).toBe('FRAME_RATE_TOO_HIGH');
    expect(fetched).toEqual(['video']);
  });
});
