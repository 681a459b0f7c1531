/**
 * The shared finishing stage with real ffmpeg, ffprobe and sharp: PCM and provider files become
 * checked MP3s with measured durations, covers are 1024x1024 JPEGs (deterministic, different per
 * song and task), the provider's image is used when given, and fewer than 2 songs fail.
 */
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coverSvg, writeCover, wrapTitle } from '../../../../src/kinds/music/pipeline/cover.js';
import { finishSongs, type StoreFile } from '../../../../src/kinds/music/pipeline/finish.js';
import { toMusicRequest } from '../../../../src/kinds/music/pipeline/request.js';
import type { RawSong } from '../../../../src/kinds/music/pipeline/types.js';

let dir: string;
let out: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'music-finish-'));
  out = path.join(dir, 'store');
  await mkdir(out);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const store: StoreFile = async (localPath, meta) => {
  const target = path.join(out, `${meta.name}.${meta.ext}`);
  await copyFile(localPath, target);
  return { url: `https://cdn.example.test/${meta.name}.${meta.ext}` };
};

function tone(seconds: number, hz: number, rate = 32000): Float32Array {
  return Float32Array.from(
    { length: Math.round(seconds * rate) },
    (_, i) => 0.3 * Math.sin((2 * Math.PI * hz * i) / rate),
  );
}

function ffprobe(file: string): { format: string; codec: string } {
  const json = JSON.parse(
    execFileSync('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file], {
      encoding: 'utf8',
    }),
  ) as {
    format: { format_name: string };
    streams: { codec_name: string }[];
  };
  return { format: json.format.format_name, codec: json.streams[0]?.codec_name ?? '' };
}

describe('finishing the songs', () => {
  it('encodes PCM to checked MP3s with measured durations, metadata and covers', async () => {
    const request = toMusicRequest(
      {
        custom_mode: true,
        title: 'Night Drive',
        style: 'Synthwave, Retro',
        instrumental: true,
        negative_tags: 'retro',
      },
      { taskId: 'fin-1', seconds: 2 },
    );
    const raw: RawSong[] = [
      { audio: { kind: 'pcm', sampleRate: 32000, channels: 1, samples: tone(1.5, 220) } },
      { audio: { kind: 'pcm', sampleRate: 32000, channels: 1, samples: tone(2.25, 330) } },
    ];
    const songs = await finishSongs(request, raw, { dir, taskId: 'fin-1', store });
    expect(songs).toEqual([
      {
        audio_url: 'https://cdn.example.test/song-1.mp3',
        image_url: 'https://cdn.example.test/cover-1.jpg',
        duration: 1.5,
        title: 'Night Drive',
        tags: 'synthwave',
        prompt: '',
      },
      {
        audio_url: 'https://cdn.example.test/song-2.mp3',
        image_url: 'https://cdn.example.test/cover-2.jpg',
        duration: 2.25,
        title: 'Night Drive',
        tags: 'synthwave',
        prompt: '',
      },
    ]);
    expect(ffprobe(path.join(out, 'song-1.mp3'))).toEqual({ format: 'mp3', codec: 'mp3' });
    for (const n of [1, 2]) {
      const meta = await sharp(path.join(out, `cover-${n}.jpg`)).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 1024, 1024]);
    }
    const [c1, c2] = await Promise.all([
      readFile(path.join(out, 'cover-1.jpg')),
      readFile(path.join(out, 'cover-2.jpg')),
    ]);
    expect(c1.equals(c2)).toBe(false);
  });

  it('re-encodes a provider file and uses the provider image', async () => {
    const wav = path.join(dir, 'provider.wav');
    execFileSync('ffmpeg', [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:duration=1:sample_rate=44100',
      '-ac',
      '2',
      '-y',
      wav,
    ]);
    const png = path.join(dir, 'provider.png');
    await sharp({ create: { width: 300, height: 200, channels: 3, background: '#336699' } })
      .png()
      .toFile(png);
    const request = toMusicRequest(
      { custom_mode: false, prompt: 'dreamy pop', instrumental: false },
      { taskId: 'fin-2', seconds: 30 },
    );
    const songs = await finishSongs(
      request,
      [
        {
          audio: { kind: 'file', path: wav },
          title: 'Provider Song',
          tags: 'Dream Pop, Airy',
          lyrics: '[Verse] hello',
          imagePath: png,
        },
        { audio: { kind: 'file', path: wav } },
      ],
      { dir, taskId: 'fin-2', store },
    );
    expect(songs[0]).toMatchObject({
      duration: 1,
      title: 'Provider Song',
      tags: 'dream pop, airy',
      prompt: '[Verse] hello',
    });
    expect(songs[1]).toMatchObject({ title: 'Dreamy pop', tags: 'dreamy pop', prompt: '' });
    const provided = await sharp(path.join(out, 'cover-1.jpg')).metadata();
    expect([provided.format, provided.width, provided.height]).toEqual(['jpeg', 300, 200]);
    expect(ffprobe(path.join(out, 'song-1.mp3'))).toEqual({ format: 'mp3', codec: 'mp3' });
  });

  it('fails with a processing failure (GENERATION_FAILED for the job) for fewer than two songs or audio that is not audio', async () => {
    const request = toMusicRequest(
      { custom_mode: false, prompt: 'x', instrumental: true },
      { taskId: 'fin-3', seconds: 1 },
    );
    await expect(
      finishSongs(request, [{ audio: { kind: 'pcm', sampleRate: 32000, channels: 1, samples: tone(1, 100) } }], {
        dir,
        taskId: 'fin-3',
        store,
      }),
    ).rejects.toMatchObject({
      name: 'ProcessingError',
      message: 'Expected 2 songs from the music backend but received 1',
    });
    const junk = path.join(dir, 'junk.mp3');
    await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } })
      .png()
      .toFile(junk);
    const song: RawSong = { audio: { kind: 'file', path: junk } };
    await expect(finishSongs(request, [song, song], { dir, taskId: 'fin-3', store })).rejects.toMatchObject({
      name: 'ProcessingError',
    });
  });
});

describe('cover art', () => {
  it('is deterministic per title, tags, task and song', async () => {
    const input = { title: 'Night Drive', tags: 'synthwave', taskId: 't', index: 0 };
    expect(coverSvg(input)).toBe(coverSvg({ ...input }));
    expect(coverSvg(input)).not.toBe(coverSvg({ ...input, taskId: 'u' }));
    expect(coverSvg(input)).not.toBe(coverSvg({ ...input, index: 1 }));
    const [a, b] = [path.join(dir, 'a.jpg'), path.join(dir, 'b.jpg')];
    await writeCover(input, a);
    await writeCover(input, b);
    expect((await readFile(a)).equals(await readFile(b))).toBe(true);
  });

  it('escapes the title and wraps it in at most three lines', () => {
    expect(coverSvg({ title: 'Rock & <Roll>', tags: '"x"', taskId: 't', index: 0 })).toContain(
      'Rock &amp; &lt;Roll&gt;',
    );
    expect(wrapTitle('one two three four five six seven eight nine ten eleven twelve thirteen', 18, 3)).toEqual([
      'one two three four',
      'five six seven',
      'eight nine ten...',
    ]);
  });
});
