import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, JobError, type ErrorCode } from '../../src/errors.js';
import { normaliseToolBody, parseJob } from '../../src/jobs/schemas.js';
import type { ToolName } from '../../src/jobs/index.js';

const IMAGE_URL = 'https://media.example/photo.jpg';
const VIDEO_URL = 'https://media.example/clip.mp4';
const AUDIO_URL = 'https://media.example/voice.mp3';

function rejection(fn: () => unknown): JobError {
  try {
    fn();
  } catch (err) {
    if (err instanceof JobError) return err;
    throw err;
  }
  throw new Error('expected a JobError, but the value was accepted');
}

const image = (input: Record<string, unknown>) => ({ model: 'vendor-image-upscale', input });
const video = (input: Record<string, unknown>) => ({ model: 'vendor-video-upscale', input });
const lipsync = (input: Record<string, unknown>) => ({
  model: 'vendor-lipsync-2',
  input: { video_url: VIDEO_URL, audio_url: AUDIO_URL, ...input },
});
const simple = (input: Record<string, unknown>) => ({ model: 'vendor-v5-generate-music', input });
const custom = (input: Record<string, unknown>) => ({
  model: 'vendor-v5-generate-music',
  input: { custom_mode: true, title: 'Night Drive', style: 'synthwave', lyrics: '[Verse] la la', ...input },
});

const chars = (n: number, c = 'a') => c.repeat(n);

describe('parseJob: accepted jobs, defaults and normalisation', () => {
  it('fills image upscale defaults', () => {
    expect(parseJob(image({ image_url: IMAGE_URL }))).toEqual({
      model: 'vendor-image-upscale',
      input: { image_url: IMAGE_URL, upscale_factor: '2' },
    });
  });

  it.each(['1', '2', '4'])('keeps upscale_factor "%s" for images and videos', (factor) => {
    expect(parseJob(image({ image_url: IMAGE_URL, upscale_factor: factor })).input).toEqual({
      image_url: IMAGE_URL,
      upscale_factor: factor,
    });
    expect(parseJob(video({ video_url: VIDEO_URL, upscale_factor: factor })).input).toEqual({
      video_url: VIDEO_URL,
      upscale_factor: factor,
    });
  });

  it.each(['keep', 'sdr'])('keeps a video upscale\'s hdr "%s"; absent, the worker decides', (hdr) => {
    expect(parseJob(video({ video_url: VIDEO_URL, hdr })).input).toEqual({
      video_url: VIDEO_URL,
      upscale_factor: '2',
      hdr,
    });
    expect(parseJob(video({ video_url: VIDEO_URL })).input).not.toHaveProperty('hdr');
  });

  it.each(['keep', 'sdr'])('keeps a lip-sync\'s hdr "%s" (the video rule); absent, the worker decides', (hdr) => {
    expect(parseJob(lipsync({ hdr })).input).toEqual({
      video_url: VIDEO_URL,
      audio_url: AUDIO_URL,
      sync_mode: 'cut_off',
      active_speaker: false,
      hdr,
    });
    expect(parseJob(lipsync({})).input).not.toHaveProperty('hdr');
  });

  it('fills lip-sync defaults and keeps the model', () => {
    expect(parseJob(lipsync({}))).toEqual({
      model: 'vendor-lipsync-2',
      input: { video_url: VIDEO_URL, audio_url: AUDIO_URL, sync_mode: 'cut_off', active_speaker: false },
    });
  });

  it.each(['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3'])('accepts lip-sync model %s', (model) => {
    const job = parseJob({ model, input: { video_url: VIDEO_URL, audio_url: AUDIO_URL } });
    expect(job.model).toBe(model);
  });

  it.each(['cut_off', 'loop', 'bounce', 'silence', 'remap'])('accepts sync_mode %s', (mode) => {
    const job = parseJob(lipsync({ sync_mode: mode, active_speaker: true }));
    expect(job.input).toMatchObject({ sync_mode: mode, active_speaker: true });
  });

  it('reads simple-mode music with instrumental defaulting to false', () => {
    expect(parseJob(simple({ prompt: 'a calm piano piece' }))).toEqual({
      model: 'vendor-v5-generate-music',
      input: { custom_mode: false, prompt: 'a calm piano piece', instrumental: false },
    });
    expect(parseJob(simple({ prompt: 'x', custom_mode: false, instrumental: true })).input).toEqual({
      custom_mode: false,
      prompt: 'x',
      instrumental: true,
    });
  });

  it('reads custom-mode music with its optional fields', () => {
    expect(parseJob(custom({ vocal_gender: 'f', negative_tags: 'metal' }))).toEqual({
      model: 'vendor-v5-generate-music',
      input: {
        custom_mode: true,
        title: 'Night Drive',
        style: 'synthwave',
        lyrics: '[Verse] la la',
        instrumental: false,
        vocal_gender: 'f',
        negative_tags: 'metal',
      },
    });
  });

  it('lets instrumental custom music go without lyrics', () => {
    const job = parseJob(custom({ instrumental: true, lyrics: undefined }));
    expect(job.input).toEqual({ custom_mode: true, title: 'Night Drive', style: 'synthwave', instrumental: true });
    expect(parseJob(custom({ instrumental: true, lyrics: '   ' })).input).not.toHaveProperty('lyrics');
    expect(parseJob(custom({ instrumental: true })).input).toHaveProperty('lyrics', '[Verse] la la');
  });

  it('strips unknown fields at every level, including custom-mode fields in simple mode', () => {
    const job = parseJob({
      id: 'task_1',
      model: 'vendor-v5-generate-music',
      extra: 1,
      input: { prompt: 'p', vocal_gender: 'nonsense', title: 5, webhook: 'https://x' },
    });
    expect(job).toEqual({
      id: 'task_1',
      model: 'vendor-v5-generate-music',
      input: { custom_mode: false, prompt: 'p', instrumental: false },
    });
    expect(parseJob(lipsync({ model: 'vendor-lipsync-3', foo: 'bar' }))).toEqual(parseJob(lipsync({})));
  });

  it('keeps id and credits, and treats null as absent', () => {
    expect(parseJob({ ...image({ image_url: IMAGE_URL, upscale_factor: null }), id: 'A-b_9', credits: 40 })).toEqual({
      id: 'A-b_9',
      model: 'vendor-image-upscale',
      input: { image_url: IMAGE_URL, upscale_factor: '2' },
      credits: 40,
    });
    expect(parseJob({ ...lipsync({ sync_mode: null, active_speaker: null }), id: null }).input).toMatchObject({
      sync_mode: 'cut_off',
      active_speaker: false,
    });
  });

  it('keeps text as sent (no trimming) and counts characters as code points', () => {
    expect(parseJob(simple({ prompt: '  padded  ' })).input).toMatchObject({ prompt: '  padded  ' });
    // 500 emoji are 1000 UTF-16 units but 500 characters: at the limit, accepted.
    expect(() => parseJob(simple({ prompt: chars(500, '🎵') }))).not.toThrow();
    expect(rejection(() => parseJob(simple({ prompt: chars(501, '🎵') }))).code).toBe('PROMPT_TOO_LONG');
  });

  it('reads only own properties: an input "__proto__" key does not supply fields', () => {
    const raw: unknown = JSON.parse(
      '{"model":"vendor-image-upscale","input":{"__proto__":{"image_url":"https://x/y.png"}}}',
    );
    expect(rejection(() => parseJob(raw)).code).toBe('MISSING_IMAGE_URL');
  });
});

// Every code a job can be rejected with before any media is fetched, with representative values.
type Case = [label: string, run: () => unknown, code: ErrorCode];
const U = (raw: unknown) => () => parseJob(raw);
const T = (tool: ToolName, body: unknown) => () => normaliseToolBody(tool, body);

const rejections: Case[] = [
  // envelope
  ['a string job', U('{"model":"x"}'), 'INVALID_JOB'],
  ['an array job', U([image({ image_url: IMAGE_URL })]), 'INVALID_JOB'],
  ['a null job', U(null), 'INVALID_JOB'],
  ['a number job', U(42), 'INVALID_JOB'],
  ['a numeric id', U({ id: 5, ...image({ image_url: IMAGE_URL }) }), 'INVALID_JOB'],
  ['an empty id', U({ id: '', ...image({ image_url: IMAGE_URL }) }), 'INVALID_JOB'],
  ['an id with a dot', U({ id: 'a.b', ...image({ image_url: IMAGE_URL }) }), 'INVALID_JOB'],
  ['an id with a path', U({ id: '../etc', ...image({ image_url: IMAGE_URL }) }), 'INVALID_JOB'],
  ['a 129-character id', U({ id: chars(129), ...image({ image_url: IMAGE_URL }) }), 'INVALID_JOB'],
  ['negative credits', U({ credits: -1, ...image({ image_url: IMAGE_URL }) }), 'INVALID_JOB'],
  ['fractional credits', U({ credits: 1.5, ...image({ image_url: IMAGE_URL }) }), 'INVALID_JOB'],
  ['string credits', U({ credits: '20', ...image({ image_url: IMAGE_URL }) }), 'INVALID_JOB'],
  ['an array input', U({ model: 'vendor-image-upscale', input: [] }), 'INVALID_JOB'],
  ['a string input', U({ model: 'vendor-image-upscale', input: IMAGE_URL }), 'INVALID_JOB'],
  ['a string tool body', T('upscale-image', 'x'), 'INVALID_JOB'],
  ['an array tool body', T('lipsync', []), 'INVALID_JOB'],
  ['a string custom_mode', U(custom({ custom_mode: 'true' })), 'INVALID_JOB'],
  ['a string instrumental', U(simple({ prompt: 'p', instrumental: 'yes' })), 'INVALID_JOB'],
  ['numeric lyrics when instrumental', U(custom({ instrumental: true, lyrics: 5 })), 'INVALID_JOB'],
  ['numeric negative_tags', U(custom({ negative_tags: 5 })), 'INVALID_JOB'],
  // model
  ['no model', U({ input: { image_url: IMAGE_URL } }), 'UNKNOWN_MODEL'],
  ['an unknown model', U({ model: 'vendor-image-upscale-8x', input: {} }), 'UNKNOWN_MODEL'],
  ['the completed music id', U({ model: 'vendor/generate-music', input: { prompt: 'p' } }), 'UNKNOWN_MODEL'],
  ['a numeric model', U({ model: 2, input: {} }), 'UNKNOWN_MODEL'],
  ['a differently cased model', U({ model: 'Vendor-Image-Upscale', input: { image_url: IMAGE_URL } }), 'UNKNOWN_MODEL'],
  // image upscale
  ['no image_url', U(image({})), 'MISSING_IMAGE_URL'],
  ['no input at all', U({ model: 'vendor-image-upscale' }), 'MISSING_IMAGE_URL'],
  ['a null image_url', U(image({ image_url: null })), 'MISSING_IMAGE_URL'],
  ['an empty image_url', U(image({ image_url: '' })), 'MISSING_IMAGE_URL'],
  ['a blank image_url', U(image({ image_url: ' \t\n' })), 'MISSING_IMAGE_URL'],
  ['a numeric image_url', U(image({ image_url: 5 })), 'MISSING_IMAGE_URL'],
  ['an object image_url', U(image({ image_url: { href: IMAGE_URL } })), 'MISSING_IMAGE_URL'],
  ['upscale_factor 2 (number)', U(image({ image_url: IMAGE_URL, upscale_factor: 2 })), 'INVALID_UPSCALE_FACTOR'],
  ['upscale_factor "8"', U(image({ image_url: IMAGE_URL, upscale_factor: '8' })), 'INVALID_UPSCALE_FACTOR'],
  ['upscale_factor "3"', U(image({ image_url: IMAGE_URL, upscale_factor: '3' })), 'INVALID_UPSCALE_FACTOR'],
  ['upscale_factor ""', U(image({ image_url: IMAGE_URL, upscale_factor: '' })), 'INVALID_UPSCALE_FACTOR'],
  ['upscale_factor "2.0"', U(image({ image_url: IMAGE_URL, upscale_factor: '2.0' })), 'INVALID_UPSCALE_FACTOR'],
  ['upscale_factor " 2"', U(image({ image_url: IMAGE_URL, upscale_factor: ' 2' })), 'INVALID_UPSCALE_FACTOR'],
  [
    'upscale_factor "8" (tool)',
    T('upscale-image', { image_url: IMAGE_URL, upscale_factor: '8' }),
    'INVALID_UPSCALE_FACTOR',
  ],
  // video upscale
  ['no video_url (upscale)', U(video({ upscale_factor: '2' })), 'MISSING_VIDEO_URL'],
  ['a blank video_url (upscale tool)', T('upscale-video', { video_url: '  ' }), 'MISSING_VIDEO_URL'],
  ['video upscale_factor 4 (number)', U(video({ video_url: VIDEO_URL, upscale_factor: 4 })), 'INVALID_UPSCALE_FACTOR'],
  [
    'video upscale_factor "8" (tool)',
    T('upscale-video', { video_url: VIDEO_URL, upscale_factor: '8' }),
    'INVALID_UPSCALE_FACTOR',
  ],
  ['hdr "hdr10"', U(video({ video_url: VIDEO_URL, hdr: 'hdr10' })), 'INVALID_JOB'],
  ['hdr true (tool)', T('upscale-video', { video_url: VIDEO_URL, hdr: true }), 'INVALID_JOB'],
  // lip-sync
  ['no video_url (lip-sync)', T('lipsync', { audio_url: AUDIO_URL }), 'MISSING_VIDEO_URL'],
  ['an empty video_url (lip-sync)', U(lipsync({ video_url: '' })), 'MISSING_VIDEO_URL'],
  ['no audio_url', T('lipsync', { video_url: VIDEO_URL }), 'MISSING_AUDIO_URL'],
  ['a numeric audio_url', U(lipsync({ audio_url: 1 })), 'MISSING_AUDIO_URL'],
  ['sync_mode "CUT_OFF"', U(lipsync({ sync_mode: 'CUT_OFF' })), 'INVALID_SYNC_MODE'],
  ['lip-sync hdr "HDR"', U(lipsync({ hdr: 'HDR' })), 'INVALID_JOB'],
  ['lip-sync hdr 1 (tool)', T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, hdr: 1 }), 'INVALID_JOB'],
  ['sync_mode ""', U(lipsync({ sync_mode: '' })), 'INVALID_SYNC_MODE'],
  [
    'sync_mode "stretch"',
    T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, sync_mode: 'stretch' }),
    'INVALID_SYNC_MODE',
  ],
  ['sync_mode 1', U(lipsync({ sync_mode: 1 })), 'INVALID_SYNC_MODE'],
  [
    'tool model "vendor-lipsync-4"',
    T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, model: 'vendor-lipsync-4' }),
    'INVALID_MODEL',
  ],
  [
    'tool model "vendor-image-upscale"',
    T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, model: 'vendor-image-upscale' }),
    'INVALID_MODEL',
  ],
  ['tool model ""', T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, model: '' }), 'INVALID_MODEL'],
  ['tool model 2', T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, model: 2 }), 'INVALID_MODEL'],
  ['active_speaker "true"', U(lipsync({ active_speaker: 'true' })), 'INVALID_ACTIVE_SPEAKER'],
  [
    'active_speaker "false" (tool)',
    T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, active_speaker: 'false' }),
    'INVALID_ACTIVE_SPEAKER',
  ],
  ['active_speaker 1', U(lipsync({ active_speaker: 1 })), 'INVALID_ACTIVE_SPEAKER'],
  // music, simple mode
  ['no prompt', U(simple({})), 'MISSING_PROMPT'],
  ['a blank prompt', U(simple({ prompt: '   ' })), 'MISSING_PROMPT'],
  ['a numeric prompt', U(simple({ prompt: 7 })), 'MISSING_PROMPT'],
  ['custom_mode false without prompt', U(simple({ custom_mode: false, title: 't', style: 's' })), 'MISSING_PROMPT'],
  ['a 501-character prompt', U(simple({ prompt: chars(501) })), 'PROMPT_TOO_LONG'],
  // music, custom mode
  ['no style', U(custom({ style: undefined })), 'MISSING_STYLE'],
  ['a blank style', U(custom({ style: ' ' })), 'MISSING_STYLE'],
  ['a 1001-character style', U(custom({ style: chars(1001) })), 'STYLE_TOO_LONG'],
  ['no title', U(custom({ title: undefined })), 'MISSING_TITLE'],
  ['an empty title', U(custom({ title: '' })), 'MISSING_TITLE'],
  ['an 81-character title', U(custom({ title: chars(81) })), 'TITLE_TOO_LONG'],
  ['no lyrics, not instrumental', U(custom({ lyrics: undefined })), 'MISSING_LYRICS'],
  ['blank lyrics, instrumental false', U(custom({ lyrics: '\n\n', instrumental: false })), 'MISSING_LYRICS'],
  ['a 5001-character lyrics', U(custom({ lyrics: chars(5001) })), 'LYRICS_TOO_LONG'],
  ['a 5001-character lyrics, instrumental', U(custom({ lyrics: chars(5001), instrumental: true })), 'LYRICS_TOO_LONG'],
  ['vocal_gender "male"', U(custom({ vocal_gender: 'male' })), 'INVALID_VOCAL_GENDER'],
  ['vocal_gender "M"', U(custom({ vocal_gender: 'M' })), 'INVALID_VOCAL_GENDER'],
  ['vocal_gender ""', U(custom({ vocal_gender: '' })), 'INVALID_VOCAL_GENDER'],
  ['vocal_gender 1', U(custom({ vocal_gender: 1 })), 'INVALID_VOCAL_GENDER'],
];

describe('rejections: every validation code with its status', () => {
  it.each(rejections)('%s -> %s', (_label, run, code) => {
    const err = rejection(run);
    expect(err.code).toBe(code);
    expect(err.status).toBe(ERROR_STATUS[code]);
    expect(err.status).toBe(400);
    expect(err.retryable).toBe(false);
    expect(err.message).toMatch(/^Expected .+ to be .+ but received .+$/s);
  });

  it('covers every spec section 7 code that validation alone can decide', () => {
    const covered = new Set(rejections.map(([, , code]) => code));
    const spec: ErrorCode[] = [
      'MISSING_PROMPT',
      'PROMPT_TOO_LONG',
      'MISSING_STYLE',
      'STYLE_TOO_LONG',
      'MISSING_TITLE',
      'TITLE_TOO_LONG',
      'MISSING_LYRICS',
      'LYRICS_TOO_LONG',
      'INVALID_VOCAL_GENDER',
      'MISSING_VIDEO_URL',
      'MISSING_AUDIO_URL',
      'INVALID_SYNC_MODE',
      'INVALID_MODEL',
      'INVALID_ACTIVE_SPEAKER',
      'MISSING_IMAGE_URL',
      'INVALID_UPSCALE_FACTOR',
      'UNKNOWN_MODEL',
      'INVALID_JOB',
    ];
    expect(spec.filter((c) => !covered.has(c))).toEqual([]);
  });
});

describe('length limits: the limit passes, one more character is rejected', () => {
  const limits: Array<[string, number, (text: string) => unknown, ErrorCode]> = [
    ['prompt', 500, (t) => simple({ prompt: t }), 'PROMPT_TOO_LONG'],
    ['style', 1000, (t) => custom({ style: t }), 'STYLE_TOO_LONG'],
    ['title', 80, (t) => custom({ title: t }), 'TITLE_TOO_LONG'],
    ['lyrics', 5000, (t) => custom({ lyrics: t }), 'LYRICS_TOO_LONG'],
  ];
  it.each(limits)('%s: %s characters', (field, limit, build, code) => {
    expect(() => parseJob(build(chars(limit)))).not.toThrow();
    const err = rejection(() => parseJob(build(chars(limit + 1))));
    expect(err.code).toBe(code);
    expect(err.message).toBe(
      `Expected ${field} to be at most ${limit} characters but received ${limit + 1} characters`,
    );
  });
});

describe('messages are worded one way', () => {
  const messages: Array<[() => unknown, string]> = [
    [
      U(image({ image_url: IMAGE_URL, upscale_factor: 2 })),
      'Expected upscale_factor to be one of "1", "2", "4" but received 2 (number)',
    ],
    [
      U(image({ image_url: IMAGE_URL, upscale_factor: '8' })),
      'Expected upscale_factor to be one of "1", "2", "4" but received "8" (string)',
    ],
    [U(image({})), 'Expected image_url to be a non-empty string but received nothing'],
    [U(image({ image_url: null })), 'Expected image_url to be a non-empty string but received nothing'],
    [U(image({ image_url: '' })), 'Expected image_url to be a non-empty string but received "" (string)'],
    [U(lipsync({ active_speaker: 'true' })), 'Expected active_speaker to be a boolean but received "true" (string)'],
    [
      U(lipsync({ sync_mode: 'stretch' })),
      'Expected sync_mode to be one of "cut_off", "loop", "bounce", "silence", "remap" but received "stretch" (string)',
    ],
    [
      T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, model: 'vendor-lipsync-1' }),
      'Expected model to be one of "vendor-lipsync-2", "vendor-lipsync-2-pro", "vendor-lipsync-3" but received "vendor-lipsync-1" (string)',
    ],
    [U(custom({ vocal_gender: 'x' })), 'Expected vocal_gender to be one of "m", "f" but received "x" (string)'],
    [U([1]), 'Expected job to be an object but received an array'],
    [T('upscale-video', 3), 'Expected body to be an object but received 3 (number)'],
    [
      U({ model: 'vendor-image-upscale', input: {}, id: 7 }),
      'Expected id to be 1 to 128 characters of A-Z, a-z, 0-9, "_" or "-" but received 7 (number)',
    ],
    [
      U({ model: 'x', input: {} }),
      'Expected model to be one of "vendor-image-upscale", "vendor-video-upscale", "vendor-lipsync-2", "vendor-lipsync-2-pro", "vendor-lipsync-3", "vendor-v5-generate-music", "vendor-music-video" but received "x" (string)',
    ],
    [U(custom({ custom_mode: 1 })), 'Expected custom_mode to be a boolean but received 1 (number)'],
  ];
  it.each(messages)('%#: %s', (run, message) => {
    expect(rejection(run).message).toBe(message);
  });

  it('shortens long received strings', () => {
    const message = rejection(U(custom({ vocal_gender: chars(100, 'z') }))).message;
    expect(message).toBe(`Expected vocal_gender to be one of "m", "f" but received "${chars(40, 'z')}…" (string)`);
  });
});

describe('validation order: the first failing check in spec table order wins', () => {
  const order: Array<[string, () => unknown, ErrorCode]> = [
    ['bad id before unknown model', U({ id: 1, model: 'nope' }), 'INVALID_JOB'],
    ['unknown model before a bad input', U({ model: 'nope', input: 'x' }), 'UNKNOWN_MODEL'],
    ['bad input object before its fields', U({ model: 'vendor-image-upscale', input: [] }), 'INVALID_JOB'],
    ['image_url before upscale_factor', U(image({ upscale_factor: '8' })), 'MISSING_IMAGE_URL'],
    ['video_url before upscale_factor', T('upscale-video', { upscale_factor: 8 }), 'MISSING_VIDEO_URL'],
    ['video_url before audio_url', T('lipsync', {}), 'MISSING_VIDEO_URL'],
    [
      'audio_url before sync_mode',
      T('lipsync', { video_url: VIDEO_URL, sync_mode: 'x', model: 'x', active_speaker: 'x' }),
      'MISSING_AUDIO_URL',
    ],
    [
      'sync_mode before model',
      T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, sync_mode: 'x', model: 'x', active_speaker: 'x' }),
      'INVALID_SYNC_MODE',
    ],
    [
      'model before active_speaker',
      T('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL, model: 'x', active_speaker: 'x' }),
      'INVALID_MODEL',
    ],
    ['custom_mode and instrumental types first', U(custom({ instrumental: 'no', style: undefined })), 'INVALID_JOB'],
    ['prompt missing before prompt length', U(simple({ prompt: '' })), 'MISSING_PROMPT'],
    ['style before title', U(custom({ style: undefined, title: undefined })), 'MISSING_STYLE'],
    ['style length before title', U(custom({ style: chars(1001), title: undefined })), 'STYLE_TOO_LONG'],
    ['title before lyrics', U(custom({ title: chars(81), lyrics: undefined })), 'TITLE_TOO_LONG'],
    ['lyrics before vocal_gender', U(custom({ lyrics: undefined, vocal_gender: 'x' })), 'MISSING_LYRICS'],
    ['vocal_gender before negative_tags', U(custom({ vocal_gender: 'x', negative_tags: 1 })), 'INVALID_VOCAL_GENDER'],
  ];
  it.each(order)('%s', (_label, run, code) => {
    expect(rejection(run).code).toBe(code);
  });
});

describe('normaliseToolBody: flat tool bodies become the unified job', () => {
  it('upscale-image implies its model and default factor', () => {
    expect(normaliseToolBody('upscale-image', { image_url: IMAGE_URL })).toEqual({
      model: 'vendor-image-upscale',
      input: { image_url: IMAGE_URL, upscale_factor: '2' },
    });
  });

  it('upscale-video implies its model and keeps the factor', () => {
    expect(normaliseToolBody('upscale-video', { video_url: VIDEO_URL, upscale_factor: '4', model: 'ignored' })).toEqual(
      {
        model: 'vendor-video-upscale',
        input: { video_url: VIDEO_URL, upscale_factor: '4' },
      },
    );
  });

  it('lipsync defaults model to vendor-lipsync-2', () => {
    expect(normaliseToolBody('lipsync', { video_url: VIDEO_URL, audio_url: AUDIO_URL })).toEqual({
      model: 'vendor-lipsync-2',
      input: { video_url: VIDEO_URL, audio_url: AUDIO_URL, sync_mode: 'cut_off', active_speaker: false },
    });
  });

  it.each(['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3'])(
    'lipsync with model %s equals the unified job with that model',
    (model) => {
      const body = { video_url: VIDEO_URL, audio_url: AUDIO_URL, sync_mode: 'bounce', active_speaker: true };
      expect(normaliseToolBody('lipsync', { ...body, model })).toEqual(parseJob({ model, input: body }));
    },
  );

  it('does not take an id or credits from a flat body', () => {
    expect(normaliseToolBody('upscale-image', { image_url: IMAGE_URL, id: 'x', credits: 3 })).toEqual({
      model: 'vendor-image-upscale',
      input: { image_url: IMAGE_URL, upscale_factor: '2' },
    });
  });

  it('refuses a tool name it does not know', () => {
    const err = rejection(() => normaliseToolBody('upscale-audio' as ToolName, {}));
    expect(err.code).toBe('INVALID_JOB');
    expect(err.message).toBe(
      'Expected tool to be one of "upscale-image", "upscale-video", "lipsync" but received "upscale-audio" (string)',
    );
  });
});
