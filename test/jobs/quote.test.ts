import { describe, expect, it } from 'vitest';
import { JobError, type ErrorCode } from '../../src/errors.js';
import { errorBody, formatDuration, formatQuoteError, quoteJob } from '../../src/jobs/quote.js';
import type { InputKind, QuoteDeps } from '../../src/jobs/quote-types.js';
import { roundedSeconds } from '../../src/jobs/pricing.js';
import { normaliseToolBody, parseJob } from '../../src/jobs/schemas.js';
import type { ContainerKind, ImageFormat, ImageInfo, LocalInput, MediaInfo } from '../../src/media/index.js';

// In-memory stand-ins for src/media: each URL maps to what probing that file would report.
type FakeFile = { image: ImageInfo } | { media: MediaInfo } | { fail: JobError };

interface FakeDeps extends QuoteDeps {
  calls: string[];
}

function fakeDeps(files: Record<string, FakeFile>): FakeDeps {
  const byPath = new Map<string, FakeFile>();
  const calls: string[] = [];
  return {
    calls,
    async localize(source: string, kind: InputKind): Promise<LocalInput> {
      calls.push(`localize ${kind} ${source}`);
      const file = files[source];
      if (file === undefined) throw new JobError('FETCH_FAILED', `no such fake file ${source}`);
      if ('fail' in file) throw file.fail;
      const path = `/tmp/job/${kind}-${calls.length}`;
      byPath.set(path, file);
      return { path, bytes: 1234, source };
    },
    async probeImage(path: string): Promise<ImageInfo> {
      calls.push(`probeImage ${path}`);
      const file = byPath.get(path);
      if (file === undefined || !('image' in file)) throw new JobError('PROBE_FAILED', 'not an image');
      return file.image;
    },
    async probeMedia(path: string): Promise<MediaInfo> {
      calls.push(`probeMedia ${path}`);
      const file = byPath.get(path);
      if (file === undefined || !('media' in file)) throw new JobError('PROBE_FAILED', 'not media');
      return file.media;
    },
  };
}

function imageFile(width: number, height: number, format: ImageFormat = 'jpeg'): FakeFile {
  return {
    image: { format, width, height, channels: 3, hasAlpha: false, bitDepth: 8, orientation: 1, hasIccProfile: false },
  };
}

function videoFile(durationSeconds: number, container: ContainerKind = 'mp4', withVideo = true): FakeFile {
  return {
    media: {
      container,
      formatName: container,
      durationSeconds,
      ...(withVideo
        ? {
            video: {
              codec: 'h264',
              width: 320,
              height: 240,
              rotation: 0,
              fps: { num: 25, den: 1 },
              variableFrameRate: false,
              frameCount: Math.round(durationSeconds * 25),
              seconds: durationSeconds,
            },
          }
        : {}),
      audio: { codec: 'aac', sampleRate: 44100, channels: 2, seconds: durationSeconds },
    },
  };
}

function audioFile(durationSeconds: number, container: ContainerKind = 'mp3', withAudio = true): FakeFile {
  return {
    media: {
      container,
      formatName: container,
      durationSeconds,
      ...(withAudio ? { audio: { codec: 'mp3', sampleRate: 44100, channels: 1, seconds: durationSeconds } } : {}),
    },
  };
}

const IMG = 'https://media.example/photo.jpg';
const VID = 'https://media.example/clip.mp4';
const AUD = 'https://media.example/voice.mp3';

async function rejectionCode(promise: Promise<unknown>): Promise<ErrorCode> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof JobError) return err.code;
    throw err;
  }
  throw new Error('expected a JobError, but the quote succeeded');
}

async function rejectionOf(promise: Promise<unknown>): Promise<JobError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof JobError) return err;
    throw err;
  }
  throw new Error('expected a JobError, but the quote succeeded');
}

describe('quoteJob: image upscale', () => {
  it('echoes dimensions and tier and hands back the local file and probe', async () => {
    const deps = fakeDeps({ [IMG]: imageFile(3000, 2000, 'png') });
    const job = normaliseToolBody('upscale-image', { image_url: IMG, upscale_factor: '2' });
    const quoted = await quoteJob(job, deps);
    expect(quoted.quote).toEqual({
      model: 'vendor-image-upscale',
      creditsUsed: 20,
      input: { image_url: IMG, upscale_factor: '2', detected_dimensions: '3000×2000', output_tier: '24mp' },
    });
    expect(quoted.quote.input).toHaveProperty('detected_dimensions', '3000\u00D72000');
    expect(quoted.kind).toBe('image');
    expect(quoted.job).toBe(job);
    expect(quoted.inputs.image).toEqual({ path: '/tmp/job/image-1', bytes: 1234, source: IMG });
    expect(quoted.probes.image?.width).toBe(3000);
    expect(deps.calls).toEqual([`localize image ${IMG}`, 'probeImage /tmp/job/image-1']);
  });

  const tiers: Array<[number, number, string, string, number]> = [
    [6000, 4000, '1', '24mp', 20],
    [4000, 3000, '2', '48mp', 40],
    [3000, 2000, '4', '96mp', 80],
  ];
  it.each(tiers)('%sx%s at factor %s quotes %s for %s credits', async (w, h, factor, tier, credits) => {
    const quoted = await quoteJob(
      parseJob({ model: 'vendor-image-upscale', input: { image_url: IMG, upscale_factor: factor } }),
      fakeDeps({ [IMG]: imageFile(w, h) }),
    );
    expect(quoted.quote.creditsUsed).toBe(credits);
    expect(quoted.quote.input).toMatchObject({ output_tier: tier, detected_dimensions: `${w}×${h}` });
  });

  it('rejects an output over 96 MP with OUTPUT_TOO_LARGE', async () => {
    const job = parseJob({ model: 'vendor-image-upscale', input: { image_url: IMG, upscale_factor: '4' } });
    expect(await rejectionCode(quoteJob(job, fakeDeps({ [IMG]: imageFile(3001, 2000) })))).toBe('OUTPUT_TOO_LARGE');
  });

  it('rejects a format outside JPEG, PNG, WebP by content, naming what it found', async () => {
    const gif = imageFile(10, 10, 'gif' as ImageFormat);
    const err = await rejectionOf(
      quoteJob(normaliseToolBody('upscale-image', { image_url: IMG }), fakeDeps({ [IMG]: gif })),
    );
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.status).toBe(422);
    expect(err.message).toBe('Expected image_url to be JPEG, PNG or WebP but received GIF content');
  });

  it('passes the probe failure through', async () => {
    const deps = fakeDeps({ [IMG]: videoFile(3) });
    expect(await rejectionCode(quoteJob(normaliseToolBody('upscale-image', { image_url: IMG }), deps))).toBe(
      'PROBE_FAILED',
    );
  });
});

describe('quoteJob: video upscale', () => {
  const cases: Array<[number, string, string, number, number, number]> = [
    // measured, factor, detected_duration, billed, rate, credits
    [12.5, '2', '12.5s', 13, 16, 208],
    [15.04, '2', '15.04s', 16, 16, 256],
    [15.04, '4', '15.04s', 16, 28, 448],
    [10, '1', '10s', 10, 16, 160],
    [15.000000001, '2', '15s', 15, 16, 240],
    [60, '4', '60s', 60, 28, 1680],
  ];
  it.each(cases)(
    '%s s at factor %s echoes %s, bills %s s x %s = %s',
    async (seconds, factor, detected, billed, rate, credits) => {
      const quoted = await quoteJob(
        normaliseToolBody('upscale-video', { video_url: VID, upscale_factor: factor }),
        fakeDeps({ [VID]: videoFile(seconds) }),
      );
      expect(quoted.quote).toEqual({
        model: 'vendor-video-upscale',
        creditsUsed: credits,
        input: {
          video_url: VID,
          upscale_factor: factor,
          detected_duration: detected,
          billed_seconds: billed,
          credits_per_second: rate,
        },
        // What was measured, said in the quote: the streams' spans and frames.
        measured: {
          video: {
            from: 'streams',
            video: { seconds: Math.round(seconds * 1000) / 1000, frames: Math.round(seconds * 25), frame_rate: '25/1' },
            audio: { seconds: Math.round(seconds * 1000) / 1000 },
          },
        },
      });
      expect(quoted.kind === 'video' && quoted.probes.video.durationSeconds).toBe(seconds);
    },
  );

  it.each<ContainerKind>(['mp4', 'mov', 'mkv'])('accepts %s', async (container) => {
    const quoted = await quoteJob(
      normaliseToolBody('upscale-video', { video_url: VID }),
      fakeDeps({ [VID]: videoFile(3, container) }),
    );
    expect(quoted.quote.creditsUsed).toBe(48);
  });

  it.each<[ContainerKind, string]>([
    ['webm', 'WebM'],
    ['gif', 'GIF'],
    ['m4v', 'M4V'],
    ['mp3', 'MP3'],
  ])('rejects %s content with PROBE_FAILED', async (container, name) => {
    const err = await rejectionOf(
      quoteJob(normaliseToolBody('upscale-video', { video_url: VID }), fakeDeps({ [VID]: videoFile(3, container) })),
    );
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toBe(`Expected video_url to be MP4, MOV or MKV but received ${name} content`);
  });

  it('rejects a container without a video stream', async () => {
    const err = await rejectionOf(
      quoteJob(normaliseToolBody('upscale-video', { video_url: VID }), fakeDeps({ [VID]: videoFile(3, 'mp4', false) })),
    );
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toBe(
      'Expected video_url to be a video with a video stream but received MP4 content without one',
    );
  });

  it.each([[0], [Number.NaN]])('rejects an unreadable duration (%s) with PROBE_FAILED', async (seconds) => {
    expect(
      await rejectionCode(
        quoteJob(normaliseToolBody('upscale-video', { video_url: VID }), fakeDeps({ [VID]: videoFile(seconds) })),
      ),
    ).toBe('PROBE_FAILED');
  });

  it('accepts 60 s and rejects 60.001 s with VIDEO_TOO_LONG', async () => {
    const job = normaliseToolBody('upscale-video', { video_url: VID });
    const quoted = await quoteJob(job, fakeDeps({ [VID]: videoFile(60) }));
    expect(quoted.quote.input).toMatchObject({ detected_duration: '60s', billed_seconds: 60 });
    expect(await rejectionCode(quoteJob(job, fakeDeps({ [VID]: videoFile(60.001) })))).toBe('VIDEO_TOO_LONG');
  });
});

describe('quoteJob: lip-sync', () => {
  const reference: Array<[string, number]> = [
    ['vendor-lipsync-2', 160],
    ['vendor-lipsync-2-pro', 320],
    ['vendor-lipsync-3', 480],
  ];
  it.each(reference)('a 15.04 s video on %s costs %s credits and reports duration 15.04', async (model, credits) => {
    const deps = fakeDeps({ [VID]: videoFile(15.04), [AUD]: audioFile(12) });
    const quoted = await quoteJob(
      normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD, model, sync_mode: 'loop' }),
      deps,
    );
    expect(quoted.quote).toEqual({
      model,
      creditsUsed: credits,
      duration: 15.04,
      input: {
        video_url: VID,
        audio_url: AUD,
        sync_mode: 'loop',
        active_speaker: false,
        model,
        billed_seconds: 16,
        credits_per_second: credits / 16,
      },
      measured: {
        video: {
          from: 'streams',
          video: { seconds: 15.04, frames: 376, frame_rate: '25/1' },
          audio: { seconds: 15.04 },
        },
        audio: { from: 'streams', audio: { seconds: 12 } },
      },
    });
    expect(quoted.kind).toBe('lipsync');
    expect(quoted.inputs.video?.source).toBe(VID);
    expect(quoted.inputs.audio?.source).toBe(AUD);
    expect(quoted.probes.audio?.durationSeconds).toBe(12);
    expect(deps.calls).toEqual([
      `localize video ${VID}`,
      'probeMedia /tmp/job/video-1',
      `localize audio ${AUD}`,
      'probeMedia /tmp/job/audio-3',
    ]);
  });

  it('charges the minimum for a short video', async () => {
    const quoted = await quoteJob(
      normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD }),
      fakeDeps({ [VID]: videoFile(3), [AUD]: audioFile(3) }),
    );
    expect(quoted.quote.creditsUsed).toBe(50);
  });

  it('refuses a video over 30 s before fetching the audio', async () => {
    const deps = fakeDeps({ [VID]: videoFile(30.001), [AUD]: audioFile(3) });
    const err = await rejectionOf(quoteJob(normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD }), deps));
    expect(err.code).toBe('VIDEO_TOO_LONG');
    expect(deps.calls.some((c) => c.startsWith('localize audio'))).toBe(false);
    await expect(
      quoteJob(
        normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD }),
        fakeDeps({ [VID]: videoFile(30), [AUD]: audioFile(3) }),
      ),
    ).resolves.toMatchObject({ quote: { creditsUsed: 300, duration: 30 } });
  });

  it.each<ContainerKind>(['mp4', 'mov', 'webm', 'm4v', 'gif'])('accepts %s video', async (container) => {
    const quoted = await quoteJob(
      normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD }),
      fakeDeps({ [VID]: videoFile(5, container), [AUD]: audioFile(5) }),
    );
    expect(quoted.quote.creditsUsed).toBe(50);
  });

  it.each<ContainerKind>(['mp3', 'wav', 'aac', 'ogg', 'm4a'])('accepts %s audio', async (container) => {
    const quoted = await quoteJob(
      normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD }),
      fakeDeps({ [VID]: videoFile(5), [AUD]: audioFile(5, container) }),
    );
    expect(quoted.probes.audio?.container).toBe(container);
  });

  it('rejects MKV video for lip-sync', async () => {
    const err = await rejectionOf(
      quoteJob(
        normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD }),
        fakeDeps({ [VID]: videoFile(5, 'mkv'), [AUD]: audioFile(5) }),
      ),
    );
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toBe('Expected video_url to be MP4, MOV, WebM, M4V or GIF but received MKV content');
  });

  it('rejects an audio input that is a video container', async () => {
    const err = await rejectionOf(
      quoteJob(
        normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD }),
        fakeDeps({ [VID]: videoFile(5), [AUD]: videoFile(5, 'mp4') }),
      ),
    );
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toBe('Expected audio_url to be MP3, WAV, AAC, OGG or M4A but received MP4 content');
  });

  it('rejects audio without an audio stream or without a duration', async () => {
    const job = normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD });
    const noStream = await rejectionOf(
      quoteJob(job, fakeDeps({ [VID]: videoFile(5), [AUD]: audioFile(5, 'wav', false) })),
    );
    expect(noStream.code).toBe('PROBE_FAILED');
    expect(noStream.message).toBe(
      'Expected audio_url to be audio with an audio stream but received WAV content without one',
    );
    const noDuration = await rejectionOf(quoteJob(job, fakeDeps({ [VID]: videoFile(5), [AUD]: audioFile(0) })));
    expect(noDuration.code).toBe('PROBE_FAILED');
    expect(noDuration.message).toBe(
      'Expected the audio duration to be a positive number of seconds but received 0 (number)',
    );
  });

  it('passes fetch failures through unchanged', async () => {
    const refused = new JobError(
      'INVALID_URL',
      'Expected video_url to be a public https URL but received "http://127.0.0.1/" (string)',
    );
    const err = await rejectionOf(
      quoteJob(
        normaliseToolBody('lipsync', { video_url: VID, audio_url: AUD }),
        fakeDeps({ [VID]: { fail: refused } }),
      ),
    );
    expect(err).toBe(refused);
  });
});

describe('quoteJob: music', () => {
  it('prices 15 credits without fetching anything', async () => {
    const deps = fakeDeps({});
    const quoted = await quoteJob(
      parseJob({ model: 'vendor-v5-generate-music', input: { prompt: 'lofi beats' } }),
      deps,
    );
    expect(quoted.quote).toEqual({
      model: 'vendor-v5-generate-music',
      creditsUsed: 15,
      input: { custom_mode: false, prompt: 'lofi beats', instrumental: false },
    });
    expect(quoted.inputs).toEqual({});
    expect(deps.calls).toEqual([]);
  });

  it('echoes title and style in custom mode', async () => {
    const job = parseJob({
      model: 'vendor-v5-generate-music',
      input: { custom_mode: true, title: 'T', style: 'jazz', instrumental: true },
    });
    expect((await quoteJob(job, fakeDeps({}))).quote.input).toEqual({
      custom_mode: true,
      title: 'T',
      style: 'jazz',
      instrumental: true,
    });
  });
});

describe('quoteJob: cancellation', () => {
  it('does nothing when the signal is already aborted', async () => {
    const deps = fakeDeps({ [IMG]: imageFile(10, 10) });
    const controller = new AbortController();
    controller.abort();
    await expect(
      quoteJob(normaliseToolBody('upscale-image', { image_url: IMG }), deps, controller.signal),
    ).rejects.toThrow();
    expect(deps.calls).toEqual([]);
  });

  it('stops after the fetch when aborted during it, and hands the signal to localize', async () => {
    const controller = new AbortController();
    const base = fakeDeps({ [IMG]: imageFile(10, 10) });
    let seen: AbortSignal | undefined;
    const deps: QuoteDeps = {
      ...base,
      async localize(source, kind, signal) {
        seen = signal;
        const local = await base.localize(source, kind);
        controller.abort();
        return local;
      },
    };
    await expect(
      quoteJob(normaliseToolBody('upscale-image', { image_url: IMG }), deps, controller.signal),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(seen).toBe(controller.signal);
    expect(base.calls.some((c) => c.startsWith('probe'))).toBe(false);
  });
});

describe('quote output', () => {
  it('formats detected_duration from the millisecond-rounded duration without trailing zeros', () => {
    const rows: Array<[number, string]> = [
      [12.5, '12.5s'],
      [15.04, '15.04s'],
      [60, '60s'],
      [15.000000001, '15s'],
      [0.0334, '0.033s'],
      [7.1234567, '7.123s'],
      [29.9999, '30s'],
    ];
    for (const [seconds, text] of rows) expect(formatDuration(roundedSeconds(seconds))).toBe(text);
  });

  it('errorBody and formatQuoteError give {"error":{code,status,message}}', () => {
    const err = new JobError(
      'VIDEO_TOO_LONG',
      'Expected the video duration to be at most 60 seconds but received 61 seconds',
    );
    expect(errorBody(err)).toEqual({
      error: {
        code: 'VIDEO_TOO_LONG',
        status: 422,
        message: 'Expected the video duration to be at most 60 seconds but received 61 seconds',
      },
    });
    expect(formatQuoteError(err)).toBe(
      '{"error":{"code":"VIDEO_TOO_LONG","status":422,"message":"Expected the video duration to be at most 60 seconds but received 61 seconds"}}',
    );
    expect(formatQuoteError(new JobError('UNKNOWN_MODEL', 'm'))).toBe(
      '{"error":{"code":"UNKNOWN_MODEL","status":400,"message":"m"}}',
    );
  });

  it('a quote survives a JSON round trip unchanged', async () => {
    const quoted = await quoteJob(
      normaliseToolBody('upscale-image', { image_url: IMG }),
      fakeDeps({ [IMG]: imageFile(640, 480) }),
    );
    expect(JSON.parse(JSON.stringify(quoted.quote))).toEqual(quoted.quote);
  });
});
