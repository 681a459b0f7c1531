/**
 * The finishing stage every backend shares: exactly 2 songs, each an ffprobe-checked MP3 with its
 * duration measured from the decoded audio, a title, lower-case tags without the negative ones,
 * the lyrics used as `prompt`, and a cover (the backend's image, else one drawn here). Files go
 * to the results store under `song-N.mp3` and `cover-N.jpg`.
 */
import path from 'node:path';
import { ProcessingError, MUSIC_SONGS_PER_GENERATION } from '../../../jobs/index.js';
import { normaliseCover, writeCover } from './cover.js';
import { checkMp3, encodeMp3, type Mp3Options } from './mp3.js';
import { songPrompt, songTags, songTitle } from './request.js';
import type { MusicProgress, MusicRequest, RawSong, Song } from './types.js';

export type StoreFile = (localPath: string, meta: { name: string; ext: string }) => Promise<{ url: string }>;

export interface FinishOptions extends Mp3Options {
  dir: string;
  taskId: string;
  store: StoreFile;
  onProgress?: (p: MusicProgress) => void;
}

export async function finishSongs(
  request: MusicRequest,
  raw: readonly RawSong[],
  opts: FinishOptions,
): Promise<Song[]> {
  if (raw.length < MUSIC_SONGS_PER_GENERATION) {
    throw new ProcessingError(
      `Expected ${MUSIC_SONGS_PER_GENERATION} songs from the music backend but received ${raw.length}`,
    );
  }
  const songs: Song[] = [];
  for (const [index, song] of raw.slice(0, MUSIC_SONGS_PER_GENERATION).entries()) {
    opts.onProgress?.({ stage: 'encoding mp3', done: index, total: MUSIC_SONGS_PER_GENERATION, unit: 'songs' });
    const n = index + 1;
    const mp3Path = path.join(opts.dir, `song-${n}.mp3`);
    await encodeMp3(song.audio, mp3Path, opts);
    const { duration } = await checkMp3(mp3Path, opts);
    const title = songTitle(request, song.title);
    const tags = songTags(request, song.tags);
    const coverPath = path.join(opts.dir, `cover-${n}.jpg`);
    if (song.imagePath === undefined) await writeCover({ title, tags, taskId: opts.taskId, index }, coverPath);
    else {
      await normaliseCover(song.imagePath, coverPath).catch((cause: unknown) => {
        throw new ProcessingError(
          `The music backend's cover image is not a readable image: ${(cause as Error).message}`,
          { cause },
        );
      });
    }
    const audio = await opts.store(mp3Path, { name: `song-${n}`, ext: 'mp3' });
    const image = await opts.store(coverPath, { name: `cover-${n}`, ext: 'jpg' });
    songs.push({
      audio_url: audio.url,
      image_url: image.url,
      duration,
      title,
      tags,
      prompt: songPrompt(request, song.lyrics),
    });
  }
  opts.onProgress?.({
    stage: 'encoding mp3',
    done: MUSIC_SONGS_PER_GENERATION,
    total: MUSIC_SONGS_PER_GENERATION,
    unit: 'songs',
  });
  return songs;
}
