import { describe, expect, it } from 'vitest';
import { chooseBackend, unfit } from '../../../../src/kinds/music/pipeline/choose.js';
import {
  deriveTitle,
  seedFor,
  songPrompt,
  songTags,
  songTitle,
  splitTags,
  toMusicRequest,
} from '../../../../src/kinds/music/pipeline/request.js';
import { parseMusicBackends } from '../../../../src/kinds/music/settings.js';
import type {
  MusicBackend,
  MusicCapabilities,
  MusicRequest,
  Readiness,
} from '../../../../src/kinds/music/pipeline/types.js';

const simple = (prompt: string, instrumental = false): MusicRequest =>
  toMusicRequest({ custom_mode: false, prompt, instrumental }, { taskId: 't1', seconds: 30 });
const custom = (
  extra: Partial<{ lyrics: string; instrumental: boolean; negative_tags: string; vocal_gender: 'm' | 'f' }> = {},
): MusicRequest =>
  toMusicRequest(
    {
      custom_mode: true,
      title: 'Night Drive',
      style: 'Synthwave, Retro, 80s Drums',
      instrumental: false,
      lyrics: '[Verse]\nla la',
      ...extra,
    },
    { taskId: 't1', seconds: 30 },
  );

describe('the music request', () => {
  it('keeps simple mode as a description and custom mode with its fields', () => {
    expect(simple('  calm piano  ')).toMatchObject({
      mode: 'simple',
      description: 'calm piano',
      instrumental: false,
      songs: 2,
      negativeTags: [],
    });
    const c = custom({ negative_tags: 'Heavy Metal, Screaming', vocal_gender: 'f' });
    expect(c).toMatchObject({
      mode: 'custom',
      title: 'Night Drive',
      style: 'Synthwave, Retro, 80s Drums',
      lyrics: '[Verse]\nla la',
      vocalGender: 'f',
      negativeTags: ['heavy metal', 'screaming'],
    });
    expect(custom({ instrumental: true }).lyrics).toBeUndefined();
  });

  it('seeds from the task id, the same for a redelivery and different between tasks', () => {
    expect(seedFor('abc')).toBe(seedFor('abc'));
    expect(seedFor('abc')).not.toBe(seedFor('abd'));
  });

  it.each([
    ['Synthwave, Retro;  80s   Drums\nsynthwave', ['synthwave', 'retro', '80s drums']],
    [' , ;', []],
  ])('splits tags %j', (text, tags) => {
    expect(splitTags(text)).toEqual(tags);
  });

  it('makes lower-case tags without the negative ones, from the style or the backend', () => {
    expect(songTags(custom())).toBe('synthwave, retro, 80s drums');
    expect(songTags(custom({ negative_tags: 'retro' }))).toBe('synthwave, 80s drums');
    expect(songTags(custom({ negative_tags: 'drums' }), 'Pop, Dream Drums, Airy')).toBe('pop, airy');
    expect(songTags(simple('An upbeat summer pop anthem with bright synths and a catchy chorus for road trips'))).toBe(
      'an upbeat summer pop anthem with bright',
    );
  });

  it.each([
    ['calm lo-fi piano, rainy night', 'Calm lo-fi piano'],
    ['[Verse] a song about the sea. With waves', 'A song about the sea'],
    ['   ', 'Untitled'],
    // Cut at a word boundary within 80 characters: "Word" and 15 more words is 79.
    ['word '.repeat(40), `Word${' word'.repeat(15)}`],
  ])('derives the title of %j', (prompt, title) => {
    const derived = deriveTitle(prompt);
    expect(derived).toBe(title);
    expect(derived.length).toBeLessThanOrEqual(80);
  });

  it('uses the given title in custom mode, else the backend title, else a derived one', () => {
    expect(songTitle(custom(), 'Provider Title')).toBe('Night Drive');
    expect(songTitle(simple('soft jazz'), 'Provider Title')).toBe('Provider Title');
    expect(songTitle(simple('soft jazz'))).toBe('Soft jazz');
  });

  it('reports the lyrics used as prompt, empty for instrumental', () => {
    expect(songPrompt(custom())).toBe('[Verse]\nla la');
    expect(songPrompt(custom({ instrumental: true }), 'ignored')).toBe('');
    expect(songPrompt(simple('x'), '[Verse] written by the backend')).toBe('[Verse] written by the backend');
    expect(songPrompt(simple('x', true), 'x')).toBe('');
  });

  it('parses the backend list in order and refuses unknown or repeated names', () => {
    expect(parseMusicBackends('ace-step, musicgen')).toEqual(['ace-step', 'musicgen']);
    expect(() => parseMusicBackends('musicgen,stable-audio')).toThrow(
      'Expected a comma-separated list of musicgen, ace-step, suno-compatible',
    );
    expect(() => parseMusicBackends('musicgen,musicgen')).toThrow('listed twice');
  });
});

function fakeBackend(
  name: string,
  capabilities: Partial<MusicCapabilities>,
  readiness: Readiness = { ready: true },
): MusicBackend {
  return {
    name,
    capabilities: { vocals: false, lyrics: false, writesLyrics: false, maxSeconds: 30, ...capabilities },
    readiness: async () => readiness,
    generate: async () => [],
  };
}

describe('choosing a backend', () => {
  const musicgen = fakeBackend('musicgen', {});
  const ace = fakeBackend('ace-step', { vocals: true, lyrics: true, writesLyrics: true });
  const aceDown = fakeBackend(
    'ace-step',
    { vocals: true, lyrics: true, writesLyrics: true },
    { ready: false, reason: 'server down' },
  );

  it('refuses lyrics to an instrumental-only backend', () => {
    expect(unfit(musicgen, custom(), false)).toBe('musicgen cannot sing lyrics');
    expect(unfit(musicgen, custom({ instrumental: true }), true)).toBeUndefined();
  });

  it('takes the first fitting ready backend in order', async () => {
    expect((await chooseBackend([musicgen, ace], custom())).backend).toBe(ace);
    expect((await chooseBackend([musicgen, ace], custom({ instrumental: true }))).backend).toBe(musicgen);
    // A simple request with vocals prefers a vocal backend even when listed second...
    expect((await chooseBackend([musicgen, ace], simple('pop'))).backend).toBe(ace);
    // ...and gets instrumental music when none with vocals is ready.
    expect((await chooseBackend([musicgen, aceDown], simple('pop'))).backend).toBe(musicgen);
  });

  it('says what is missing when nothing can serve', async () => {
    const choice = await chooseBackend([musicgen, aceDown], custom());
    expect(choice.backend).toBeUndefined();
    expect(choice.passed).toEqual(['musicgen cannot sing lyrics', 'server down']);
  });
});

describe('music readiness', () => {
  it('is ready when any backend is, and otherwise names what each one misses', async () => {
    const { musicReadiness } = await import('../../../../src/kinds/music/pipeline/backends.js');
    const down = fakeBackend('ace-step', {}, { ready: false, reason: 'server down' });
    const up = fakeBackend('musicgen', {});
    expect(await musicReadiness([down, up])).toEqual({
      ready: true,
      backends: [
        { name: 'ace-step', ready: false, reason: 'server down' },
        { name: 'musicgen', ready: true },
      ],
    });
    expect(await musicReadiness([down])).toMatchObject({ ready: false, reason: 'ace-step: server down' });
    expect(await musicReadiness([])).toMatchObject({
      ready: false,
      reason: 'no music backend configured (MEDIA_WORKER_MUSIC_BACKENDS)',
    });
  });
});
