/**
 * From the validated job to the one request shape, and the pure metadata rules of the finishing
 * stage: derived titles, tags, the prompt field. Table-tested in test/kinds/music/pipeline/request.test.ts.
 */
import { createHash } from 'node:crypto';
import { MUSIC_SONGS_PER_GENERATION, MUSIC_TITLE_MAX_CHARS, type MusicInput } from '../../../jobs/index.js';
import type { MusicRequest } from './types.js';

/** A seed from the task id: a redelivered job generates the same songs. */
export function seedFor(taskId: string): number {
  return createHash('sha256').update(taskId).digest().readUInt32LE(0);
}

/** Comma, semicolon or line separated styles, lower-case, trimmed, de-duplicated. */
export function splitTags(text: string): string[] {
  const seen = new Set<string>();
  for (const piece of text.split(/[,;\n]/)) {
    const tag = piece.toLowerCase().replace(/\s+/g, ' ').trim();
    if (tag !== '') seen.add(tag);
  }
  return [...seen];
}

export function toMusicRequest(input: MusicInput, opts: { taskId: string; seconds: number }): MusicRequest {
  const base = {
    songs: MUSIC_SONGS_PER_GENERATION,
    seconds: opts.seconds,
    seed: seedFor(opts.taskId),
    instrumental: input.instrumental,
  };
  if (!input.custom_mode) {
    return { ...base, mode: 'simple', description: input.prompt.trim(), negativeTags: [] };
  }
  return {
    ...base,
    mode: 'custom',
    description: input.style.trim(),
    title: input.title.trim(),
    style: input.style.trim(),
    ...(input.instrumental || input.lyrics === undefined ? {} : { lyrics: input.lyrics }),
    ...(input.vocal_gender === undefined ? {} : { vocalGender: input.vocal_gender }),
    negativeTags: splitTags(input.negative_tags ?? ''),
  };
}

/** Longest tag kept from a simple prompt written as a sentence. */
const MAX_TAG_CHARS = 40;

/**
 * The `tags` of a song: the backend's tags when it gave some, else the style (custom) or the
 * prompt's comma-separated parts (simple); lower-case; a tag containing a negative tag is dropped.
 */
export function songTags(request: MusicRequest, backendTags?: string): string {
  const source = backendTags !== undefined && backendTags.trim() !== '' ? backendTags : request.description;
  const tags = splitTags(source)
    .map((t) => (t.length > MAX_TAG_CHARS ? cutAtWord(t, MAX_TAG_CHARS) : t))
    .filter((t) => !request.negativeTags.some((neg) => t.includes(neg)));
  return [...new Set(tags)].join(', ');
}

function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max + 1);
  const space = cut.lastIndexOf(' ');
  return (space > max / 2 ? cut.slice(0, space) : text.slice(0, max)).trim();
}

/**
 * The title: the given one (custom), else the backend's, else the prompt's first clause with
 * section tags removed, capitalised and cut at a word within 80 characters.
 */
export function songTitle(request: MusicRequest, backendTitle?: string): string {
  if (request.title !== undefined && request.title !== '') return request.title.slice(0, MUSIC_TITLE_MAX_CHARS);
  const given = backendTitle?.trim();
  if (given !== undefined && given !== '') return cutAtWord(given, MUSIC_TITLE_MAX_CHARS);
  return deriveTitle(request.description);
}

export function deriveTitle(prompt: string): string {
  const clean = prompt
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const clause = clean.split(/[.!?\n]|,\s/)[0]?.trim() ?? '';
  const text = clause === '' ? clean : clause;
  if (text === '') return 'Untitled';
  const title = cutAtWord(text, MUSIC_TITLE_MAX_CHARS);
  return title.charAt(0).toUpperCase() + title.slice(1);
}

/** The `prompt` field: the lyrics sung ("" for instrumental). */
export function songPrompt(request: MusicRequest, backendLyrics?: string): string {
  if (request.instrumental) return '';
  return request.lyrics ?? backendLyrics ?? '';
}
