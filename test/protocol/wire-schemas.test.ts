/**
 * The JSON Schemas under docs/schemas/ are what the code generates (npm run schemas:export), the
 * zod schemas they come from describe the TypeScript types the worker really sends, and the job
 * schema accepts exactly what the worker's validation accepts.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { JobError } from '../../src/errors.js';
import {
  checkJobEnvelope,
  parseJob,
  type ImageResult,
  type LipsyncResult,
  type MusicResult,
  type VideoResult,
  type ImageQuote,
  type LipsyncQuote,
  type MusicQuote,
  type VideoQuote,
  imageQuoteSchema,
  imageResultSchema,
  jobMessageSchema,
  lipsyncQuoteSchema,
  lipsyncResultSchema,
  musicQuoteSchema,
  musicResultSchema,
  videoQuoteSchema,
  videoResultSchema,
} from '../../src/jobs/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { wireJsonSchemas } from '../../src/protocol/wire-schemas.js';
import { SCHEMAS_DIR, schemaFileText } from '../../scripts/export-schemas.js';

/** Optional fields compared without zod's `| undefined` (the sources use exactOptionalPropertyTypes). */
type Clean<T> = T extends readonly (infer U)[]
  ? Clean<U>[]
  : T extends object
    ? { [K in keyof T]: Clean<Exclude<T[K], undefined>> }
    : T;
type Same<A, B> = [Clean<A>] extends [Clean<B>] ? ([Clean<B>] extends [Clean<A>] ? true : false) : false;
/** Fails to compile when a schema and the type the code sends drift apart. */
const same = <A, B>(ok: Same<A, B>): Same<A, B> => ok;

describe('JSON Schemas of the protocol', () => {
  it('docs/schemas/ holds exactly what the zod schemas generate (run npm run schemas:export after a change)', async () => {
    const generated = wireJsonSchemas();
    const committed = (await readdir(SCHEMAS_DIR)).filter((f) => f.endsWith('.schema.json')).sort();
    expect(committed).toEqual(Object.keys(generated).sort());
    for (const [name, schema] of Object.entries(generated)) {
      expect(await readFile(path.join(SCHEMAS_DIR, name), 'utf8'), name).toBe(schemaFileText(schema));
    }
    expect(path.relative(PACKAGE_ROOT, SCHEMAS_DIR)).toBe(path.join('docs', 'schemas'));
  });

  it('the quote and result schemas describe the types the worker sends', () => {
    expect([
      same<z.output<typeof imageQuoteSchema>, ImageQuote>(true),
      same<z.output<typeof videoQuoteSchema>, VideoQuote>(true),
      same<z.output<typeof lipsyncQuoteSchema>, LipsyncQuote>(true),
      same<z.output<typeof musicQuoteSchema>, MusicQuote>(true),
      same<z.output<typeof imageResultSchema>, ImageResult>(true),
      same<z.output<typeof videoResultSchema>, VideoResult>(true),
      same<z.output<typeof lipsyncResultSchema>, LipsyncResult>(true),
      same<z.output<typeof musicResultSchema>, MusicResult>(true),
    ]).not.toContain(false);
  });

  const img = (input: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    model: 'vendor-image-upscale',
    input,
    ...extra,
  });
  const music = (input: Record<string, unknown>) => ({ model: 'vendor-v5-generate-music', input });
  const corpus: unknown[] = [
    img({ image_url: 'https://a/b.png' }),
    img(
      { image_url: 'https://a/b.png', upscale_factor: '4' },
      { id: 'task_1', credits: 40, createdAt: '2025-03-01T12:00:00.000Z' },
    ),
    img({ image_url: 'https://a/b.png', upscale_factor: '3' }),
    img({ image_url: 'https://a/b.png', upscale_factor: 2 }),
    img({ image_url: '   ' }),
    img({}),
    img({ image_url: 'https://a/b.png' }, { id: 'has.dot' }),
    img({ image_url: 'https://a/b.png' }, { id: '' }),
    img({ image_url: 'https://a/b.png' }, { credits: -1 }),
    img({ image_url: 'https://a/b.png' }, { credits: 1.5 }),
    img({ image_url: 'https://a/b.png' }, { priority: 'high' }),
    img({ image_url: 'https://a/b.png' }, { deadline: '2025-03-01T12:00:00Z' }),
    { model: 'vendor-video-upscale', input: { video_url: 'https://a/v.mp4', upscale_factor: '1' } },
    { model: 'vendor-video-upscale', input: { image_url: 'https://a/v.mp4' } },
    {
      model: 'vendor-lipsync-3',
      input: { video_url: 'https://a/v.mp4', audio_url: 'https://a/a.wav', sync_mode: 'loop', active_speaker: true },
    },
    {
      model: 'vendor-lipsync-2',
      input: { video_url: 'https://a/v.mp4', audio_url: 'https://a/a.wav', sync_mode: 'LOOP' },
    },
    {
      model: 'vendor-lipsync-2',
      input: { video_url: 'https://a/v.mp4', audio_url: 'https://a/a.wav', active_speaker: 'true' },
    },
    { model: 'vendor-lipsync-2', input: { video_url: 'https://a/v.mp4' } },
    { model: 'vendor-lipsync-9', input: {} },
    { model: 'vendor/generate-music', input: { prompt: 'x' } },
    music({ prompt: 'a calm song' }),
    music({ prompt: 'a calm song', instrumental: true, custom_mode: false }),
    music({ prompt: 'x'.repeat(500) }),
    music({ prompt: 'x'.repeat(501) }),
    music({ custom_mode: true, title: 'T', style: 'jazz', lyrics: '[Verse] la' }),
    music({ custom_mode: true, title: 'T', style: 'jazz' }),
    music({ custom_mode: true, title: 'T', style: 'jazz', instrumental: true }),
    music({ custom_mode: true, title: 'T'.repeat(81), style: 'jazz', instrumental: true }),
    music({
      custom_mode: true,
      title: 'T',
      style: 'jazz',
      instrumental: true,
      vocal_gender: 'f',
      negative_tags: 'metal',
    }),
    music({ custom_mode: true, title: 'T', style: 'jazz', instrumental: true, vocal_gender: 'x' }),
    music({ custom_mode: 'yes', prompt: 'x' }),
    'not an object',
    [],
    { input: {} },
  ];

  it('the job schema accepts exactly the jobs the worker accepts', () => {
    for (const job of corpus) {
      let accepted = true;
      try {
        checkJobEnvelope(job);
        parseJob(job);
      } catch (err) {
        if (!(err instanceof JobError)) throw err;
        accepted = false;
      }
      expect(jobMessageSchema.safeParse(job).success, JSON.stringify(job).slice(0, 120)).toBe(accepted);
    }
  });

  it('refuses job fields outside the envelope with INVALID_JOB, naming them', () => {
    expect(() => checkJobEnvelope(img({ image_url: 'https://a/b.png' }, { priority: 'high' }))).toThrow(
      expect.objectContaining({
        code: 'INVALID_JOB',
        message: expect.stringMatching(/only the fields id, model, input, credits, createdAt.*"priority"/),
      }),
    );
  });
});
