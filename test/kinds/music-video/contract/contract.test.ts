/**
 * The music video's pure parts: the input parser's order and codes, the price table, the layout
 * and title fitting, the ffmpeg argument builders and the readiness listing parser.
 */
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, type ErrorCode, type JobError } from '../../../../src/errors.js';
import { failure } from '../../../media/helpers.js';
import {
  MUSIC_VIDEO_ERROR_CODES,
  musicVideoInputSchema,
  parseMusicVideoInput,
  priceMusicVideo,
} from '../../../../src/kinds/music-video/pipeline/index.js';
import {
  CHAR_WIDTH_EM,
  LINE_HEIGHT_EM,
  fitTitle,
  layoutFor,
} from '../../../../src/kinds/music-video/pipeline/layout.js';
import {
  filterGraph,
  filterValue,
  frameCount,
  outputSampleRate,
  renderArgs,
  type RenderPlan,
} from '../../../../src/kinds/music-video/pipeline/render-args.js';
import { listedNames, missingFrom } from '../../../../src/kinds/music-video/pipeline/readiness.js';
import { audioMeasureArgs, checkQuote } from '../../../../src/jobs/index.js';

const AUDIO = 'https://media.example/song.mp3';
const IMAGE = 'https://media.example/cover.jpg';

/** The JobError a synchronous call throws (media/helpers' `failure`, for a call that does not return a promise). */
const rejection = (fn: () => unknown): Promise<JobError> => failure(Promise.resolve().then(fn));

describe('parseMusicVideoInput', () => {
  it("fills the defaults and keeps a generated song's URLs as they are", () => {
    const input = parseMusicVideoInput({ audio_url: AUDIO, image_url: IMAGE });
    expect(input).toEqual({ audio_url: AUDIO, image_url: IMAGE, style: 'waveform', aspect_ratio: '16:9' });
    expect(musicVideoInputSchema.parse({ audio_url: AUDIO, image_url: IMAGE })).toEqual(input);
  });

  it('takes every field', () => {
    const input = parseMusicVideoInput({
      audio_url: AUDIO,
      image_url: IMAGE,
      title: 'Rain on Glass',
      style: 'spectrum',
      aspect_ratio: '9:16',
    });
    expect(input).toEqual({
      audio_url: AUDIO,
      image_url: IMAGE,
      title: 'Rain on Glass',
      style: 'spectrum',
      aspect_ratio: '9:16',
    });
    expect(musicVideoInputSchema.parse(input)).toEqual(input);
  });

  it('drops a null or blank title, counts characters as a person does (80 emoji pass)', () => {
    expect(parseMusicVideoInput({ audio_url: AUDIO, image_url: IMAGE, title: '   ' }).title).toBeUndefined();
    expect(parseMusicVideoInput({ audio_url: AUDIO, image_url: IMAGE, title: null }).title).toBeUndefined();
    expect(parseMusicVideoInput({ audio_url: AUDIO, image_url: IMAGE, title: '🎵'.repeat(80) }).title).toBe(
      '🎵'.repeat(80),
    );
  });

  const rejections: [string, unknown, ErrorCode][] = [
    ['input not an object', 'song', 'INVALID_JOB'],
    ['input an array', [AUDIO], 'INVALID_JOB'],
    ['nothing at all', undefined, 'MISSING_AUDIO_URL'],
    [
      'everything wrong: audio_url first',
      { image_url: 3, title: 5, style: 'x', aspect_ratio: '4:3' },
      'MISSING_AUDIO_URL',
    ],
    ['audio_url blank', { audio_url: ' ', image_url: IMAGE }, 'MISSING_AUDIO_URL'],
    ['audio_url not a string', { audio_url: 42, image_url: IMAGE }, 'MISSING_AUDIO_URL'],
    ['then image_url', { audio_url: AUDIO, title: 5, style: 'x', aspect_ratio: '4:3' }, 'MISSING_IMAGE_URL'],
    [
      'then a title that is not text',
      { audio_url: AUDIO, image_url: IMAGE, title: 5, style: 'x', aspect_ratio: '4:3' },
      'INVALID_TITLE',
    ],
    [
      'then a title over 80',
      { audio_url: AUDIO, image_url: IMAGE, title: 'a'.repeat(81), style: 'x', aspect_ratio: '4:3' },
      'TITLE_TOO_LONG',
    ],
    [
      'then style',
      { audio_url: AUDIO, image_url: IMAGE, title: 'ok', style: 'bars', aspect_ratio: '4:3' },
      'INVALID_STYLE',
    ],
    ['style in another case', { audio_url: AUDIO, image_url: IMAGE, style: 'Waveform' }, 'INVALID_STYLE'],
    ['then aspect_ratio', { audio_url: AUDIO, image_url: IMAGE, aspect_ratio: '4:3' }, 'INVALID_ASPECT_RATIO'],
    ['aspect_ratio as a number', { audio_url: AUDIO, image_url: IMAGE, aspect_ratio: 1 }, 'INVALID_ASPECT_RATIO'],
  ];

  it.each(rejections)('%s -> %s', async (_label, raw, code) => {
    const err = await rejection(() => parseMusicVideoInput(raw));
    expect(err.code).toBe(code);
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/^Expected .+ to be .+ but received .+$/s);
  });

  it('names the 80-character limit and the count', async () => {
    expect(
      (await rejection(() => parseMusicVideoInput({ audio_url: AUDIO, image_url: IMAGE, title: 'é'.repeat(81) })))
        .message,
    ).toBe('Expected title to be at most 80 characters but received 81 characters');
  });

  it('lists every code it can answer with, each with its status', () => {
    const codes = MUSIC_VIDEO_ERROR_CODES.map(([code]) => code);
    for (const [, , code] of rejections) expect(codes).toContain(code);
    for (const code of ['AUDIO_TOO_LONG', 'PROBE_FAILED', 'MUSIC_VIDEO_FAILED', 'INSUFFICIENT_CREDITS'] as const)
      expect(codes).toContain(code);
    expect(Object.fromEntries(codes.map((c) => [c, ERROR_STATUS[c]]))).toMatchObject({
      INVALID_STYLE: 400,
      INVALID_ASPECT_RATIO: 400,
      INVALID_TITLE: 400,
      AUDIO_TOO_LONG: 422,
      PROBE_FAILED: 422,
      MUSIC_VIDEO_FAILED: 500,
    });
  });
});

describe('priceMusicVideo', () => {
  it.each([
    // seconds, billed seconds, credits: max(20, ceil(seconds) x 2)
    [0.5, 1, 20],
    [4, 4, 20],
    [10, 10, 20],
    [10.001, 11, 22],
    [12.4, 13, 26],
    [15.0000001, 15, 30],
    [60, 60, 120],
    [479.9, 480, 960],
    [480, 480, 960],
    [480.0004, 480, 960],
  ])('%s s bills %s s, %s credits', (seconds, billed, credits) => {
    expect(priceMusicVideo(seconds)).toEqual({
      creditsUsed: credits,
      durationSeconds: Math.round(seconds * 1000) / 1000,
      billedSeconds: billed,
      creditsPerSecond: 2,
      minimumCredits: 20,
    });
  });

  it('refuses audio over 8 minutes with AUDIO_TOO_LONG and no duration with PROBE_FAILED', async () => {
    const long = await rejection(() => priceMusicVideo(480.001));
    expect([long.code, long.status, long.message]).toEqual([
      'AUDIO_TOO_LONG',
      422,
      'Expected the audio duration to be at most 480 seconds (8 minutes) but received 480.001 seconds',
    ]);
    expect((await rejection(() => priceMusicVideo(0))).code).toBe('PROBE_FAILED');
    expect((await rejection(() => priceMusicVideo(Number.NaN))).code).toBe('PROBE_FAILED');
  });
});

describe('layout', () => {
  it.each([
    ['16:9', 1920, 1080],
    ['1:1', 1080, 1080],
    ['9:16', 1080, 1920],
  ] as const)(
    '%s is %sx%s, the cover box square, everything inside the frame and in order',
    (aspect, width, height) => {
      const l = layoutFor(aspect);
      expect([l.width, l.height]).toEqual([width, height]);
      expect(l.cover.width).toBe(l.cover.height);
      const boxes = [l.cover, l.visualiser];
      for (const b of boxes) {
        expect(b.x).toBeGreaterThanOrEqual(0);
        expect(b.x + b.width).toBeLessThanOrEqual(width);
        expect(b.y + b.height).toBeLessThanOrEqual(height);
        for (const n of [b.x, b.y, b.width, b.height]) expect(n % 2).toBe(0);
      }
      // Cover, then the title's room, then the band: no overlap.
      expect(l.title.y).toBeGreaterThan(l.cover.y + l.cover.height);
      expect(l.title.y + l.title.maxHeight).toBeLessThan(l.visualiser.y);
    },
  );

  it('fits a title: one line when it fits, two for a long one, never wider or taller than its room', () => {
    for (const aspect of ['16:9', '1:1', '9:16'] as const) {
      const room = layoutFor(aspect).title;
      for (const title of [
        'Rain',
        'A Much Longer Title For The Song That Needs Two Lines',
        'x'.repeat(80),
        `${'word '.repeat(16)}`.trim(),
      ]) {
        const fitted = fitTitle(title, room);
        expect(fitted.lines.length).toBeLessThanOrEqual(2);
        expect(fitted.lines.join(fitted.lines.length === 2 && title.includes(' ') ? ' ' : '')).toBe(title);
        for (const line of fitted.lines)
          expect([...line].length * CHAR_WIDTH_EM * fitted.fontSize).toBeLessThanOrEqual(room.maxWidth);
        expect(fitted.lines.length * LINE_HEIGHT_EM * fitted.fontSize).toBeLessThanOrEqual(room.maxHeight);
      }
      expect(fitTitle('Rain', room)).toEqual({ lines: ['Rain'], fontSize: room.fontSize });
    }
    expect(fitTitle('  two\nlines  ', layoutFor('16:9').title).lines).toEqual(['two lines']);
  });
});

describe('render arguments', () => {
  const plan = (overrides: Partial<RenderPlan> = {}): RenderPlan => ({
    audio: { path: '/job/song.mp3', container: 'mp3', sampleRate: 44_100 },
    coverPath: '/job/cover-prepared.png',
    durationSeconds: 12.4,
    style: 'waveform',
    layout: layoutFor('16:9'),
    outputPath: '/job/out.mp4',
    ...overrides,
  });

  it('frames: the audio length in frames, rounded up, so the video ends within one frame after the audio', () => {
    expect(frameCount(12.4)).toBe(372);
    expect(frameCount(4)).toBe(120);
    expect(frameCount(4.01)).toBe(121);
    expect(frameCount(1 / 30 + 1e-9)).toBe(1);
    expect(frameCount(0.001)).toBe(1);
  });

  it('escapes values at both levels of the filter syntax', () => {
    expect(filterValue('/tmp/plain/title-0.txt')).toBe('/tmp/plain/title-0.txt');
    expect(filterValue("/a:b/c'd,e[f];g\\h")).toBe("/a\\\\:b/c\\\\\\'d\\,e\\[f\\]\\;g\\\\\\\\h");
  });

  it('whitelists both inputs, maps the graph and the audio, and encodes H.264 yuv420p 30 fps and AAC', () => {
    const args = renderArgs(plan());
    const joined = args.join(' ');
    // At most the quoted 12.4 s (and the backstop's 0.1 s) is read, whatever the file became.
    expect(joined).toContain(
      '-t 12.500 -fflags +discardcorrupt -protocol_whitelist file,pipe -format_whitelist mp3 -f mp3 -i file:/job/song.mp3',
    );
    expect(joined).toContain(
      '-protocol_whitelist file,pipe -format_whitelist png_pipe -f png_pipe -i file:/job/cover-prepared.png',
    );
    expect(joined).toContain(
      '-map [video] -map 0:a:0 -c:v libx264 -preset ultrafast -crf 23 -g 60 -pix_fmt yuv420p -r 30 -c:a aac',
    );
    // The video ends in the graph, at its 372nd frame.
    expect(filterGraph(plan())).toMatch(/,trim=end_frame=372\[video\]$/);
    expect(joined).toContain('-map_metadata -1');
    expect(args).not.toContain('-ar');
    expect(args.slice(-5)).toEqual(['-progress', 'pipe:1', '-f', 'mp4', 'file:/job/out.mp4']);
    expect(renderArgs(plan({ style: 'still' }))).toEqual(expect.arrayContaining(['-tune', 'stillimage']));
    expect(
      renderArgs(plan({ audio: { path: '/job/a.wav', container: 'wav', sampleRate: 37_800 } })).join(' '),
    ).toContain('-ar 48000');
    expect(renderArgs(plan({ metadataTitle: 'Rain' })).join(' ')).toContain('-metadata title=Rain');
  });

  it('keeps AAC rates and resamples others to 48 kHz', () => {
    expect([44_100, 48_000, 22_050, 8000, 37_800, 192_000].map(outputSampleRate)).toEqual([
      44_100, 48_000, 22_050, 8000, 48_000, 48_000,
    ]);
  });

  it('draws the visualiser of the style over the still picture, and none for still', () => {
    expect(filterGraph(plan())).toContain('showwaves=s=1708x200');
    expect(filterGraph(plan({ style: 'spectrum' }))).toContain('showfreqs=s=1708x200');
    const still = filterGraph(plan({ style: 'still' }));
    expect(still).not.toMatch(/showwaves|showfreqs|drawbox|\[0:a/);
    expect(still).toMatch(/setpts=N,trim=end_frame=372\[video\]$/);
    // The cover: fitted (decrease), never stretched to the box.
    expect(still).toContain('scale=580:580:force_original_aspect_ratio=decrease');
    const titled = filterGraph(
      plan({ title: { files: ['/job/title-0.txt', '/job/title-1.txt'], fontSize: 50, fontFile: '/fonts/Bold.ttf' } }),
    );
    expect(titled.match(/drawtext=expansion=none/g)).toHaveLength(2);
    expect(titled).toContain('textfile=/job/title-1.txt:fontsize=50');
    expect(titled).toContain('y=739');
  });

  it('measures audio by decoding every sample, stopping at an error or a second past the limit', () => {
    const args = audioMeasureArgs({ path: '/job/a.flac', container: 'flac', sampleRate: 96_000 });
    expect(args.join(' ')).toContain(
      '-xerror -fflags +discardcorrupt -protocol_whitelist file,pipe -format_whitelist flac -f flac -i file:/job/a.flac -map 0:a:0',
    );
    expect(args.join(' ')).toContain('-t 481 -ac 1 -ar 96000 -c:a pcm_u8 -f u8 pipe:1');
    expect(() => audioMeasureArgs({ path: '/job/a.wav', container: 'wav', sampleRate: 0 })).toThrow(RangeError);
  });
});

describe('readiness listing', () => {
  it('reads names from ffmpeg -filters, -encoders and -demuxers, and names what is missing', () => {
    const filters =
      'Filters:\n  T.. = Timeline support\n  A = Audio input/output\n ... showwaves         A->V       Convert input audio to a video output.\n T.C drawtext          V->V       Draw text\n';
    const encoders =
      'Encoders:\n V..... = Video\n ------\n V....D libx264               libx264 H.264\n A..... aac                  AAC\n';
    const demuxers =
      'File formats:\n D. = Demuxing supported\n --\n D  mov,mp4,m4a,3gp,3g2,mj2 QuickTime / MOV\n D  png_pipe        piped png sequence\n';
    expect([...listedNames(filters)].sort()).toEqual(['drawtext', 'showwaves']);
    expect([...listedNames(encoders)].sort()).toEqual(['aac', 'libx264']);
    expect(listedNames(demuxers)).toEqual(new Set(['mov', 'mp4', 'm4a', '3gp', '3g2', 'mj2', 'png_pipe']));
    expect(missingFrom('filter', ['showwaves', 'showfreqs', 'drawtext'], listedNames(filters))).toEqual([
      'ffmpeg filter showfreqs',
    ]);
  });
});

describe("the gateway's re-check of a music video quote (checkQuote)", () => {
  const job = {
    model: 'vendor-music-video' as const,
    input: parseMusicVideoInput({ audio_url: AUDIO, image_url: IMAGE, title: 'Twelve' }),
  };
  const echo = { ...job.input, detected_duration: '12.4s', billed_seconds: 13, credits_per_second: 2 };
  const quote = { model: 'vendor-music-video', creditsUsed: 26, input: echo };

  it("accepts the price list's price for the measured duration, echoing the measurement", () => {
    expect(checkQuote(job, quote)).toEqual({ ok: true, input: echo });
  });

  it('refuses another price, another echo, a duration over 8 minutes', () => {
    expect(checkQuote(job, { ...quote, creditsUsed: 20 })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('creditsUsed is 20 where the price list gives 26'),
    });
    expect(checkQuote(job, { ...quote, input: { ...echo, billed_seconds: 12 } })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('billed_seconds'),
    });
    expect(checkQuote(job, { ...quote, input: { ...echo, title: 'Other' } })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('title'),
    });
    expect(checkQuote(job, { ...quote, input: { ...echo, style: 'still' } })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('style'),
    });
    expect(
      checkQuote(job, {
        ...quote,
        creditsUsed: 962,
        input: { ...echo, detected_duration: '480.5s', billed_seconds: 481 },
      }),
    ).toMatchObject({ ok: false, reason: expect.stringContaining('AUDIO_TOO_LONG') });
  });
});
