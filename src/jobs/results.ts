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
