/**
 * Spec 2.3's `result` object of a completed task, one shape per kind. The application layer builds
 * it (src/app/run-job.ts), the worker carries it in the terminal event.
 */
export interface ImageResult {
  url: string;
  type: 'image';
  width: number;
  height: number;
  format: string;
}

export interface VideoResult {
  url: string;
  type: 'video';
  width: number;
  height: number;
  /** Seconds. */
  duration: number;
  frames: number;
}

/** Spec 2.3's lip-sync result. */
export interface LipsyncResult {
  url: string;
  type: 'video';
  duration: number;
}

/** One finished song: the spec 2.3 `songs[]` entry. */
export interface Song {
  audio_url: string;
  image_url: string;
  duration: number;
  title: string;
  tags: string;
  prompt: string;
}

/** Spec 2.3's music result: exactly two songs. */
export interface MusicResult {
  songs: Song[];
}

