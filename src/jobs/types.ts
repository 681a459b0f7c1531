/**
 * Each kind's validated job: what `parseJob` and `normaliseToolBody` return and what its pipeline
 * receives (the union `Job` is the registry's, kinds/index.ts). Field names inside `input` are the spec's. Once a value has this type it has passed
 * validation, defaults are filled in and unknown fields are gone.
 */
import type { HdrMode } from '../video/settings.js';

export const UPSCALE_FACTORS = ['1', '2', '4'] as const;
export type UpscaleFactor = (typeof UPSCALE_FACTORS)[number];
export const DEFAULT_UPSCALE_FACTOR: UpscaleFactor = '2';

export interface JobBase {
  /** Task id from the control plane: 1 to 128 of A-Z a-z 0-9 _ - (safe in NATS subjects and file names). */
  id?: string;
  /** Credits the control plane deducted upfront, when it says so; the worker may compare its own quote. */
  credits?: number;
}

export interface ImageUpscaleInput {
  image_url: string;
  upscale_factor: UpscaleFactor;
}

export interface VideoUpscaleInput {
  video_url: string;
  upscale_factor: UpscaleFactor;
  /** HDR input kept as HDR or tone-mapped to SDR; absent: the worker's default. */
  hdr?: HdrMode;
}

export interface ImageUpscaleJob extends JobBase {
  model: 'vendor-image-upscale';
  input: ImageUpscaleInput;
}

export interface VideoUpscaleJob extends JobBase {
  model: 'vendor-video-upscale';
  input: VideoUpscaleInput;
}

/** What a running job reports (docs/protocol.md, progress messages): the CLI's bar and the worker's progress events read the same value. */
export interface JobProgress {
  /** Short name of what runs now: `fetching and probing`, `upscaling`, `detecting faces`, ... (docs/protocol.md). */
  stage: string;
  /** Units done and total in this stage (frames, tiles, seconds), when countable. */
  done?: number;
  total?: number;
  /** What done and total count: `frames`, `tiles`, `bytes`, ... */
  unit?: string;
  /** 0..100; computed from done/total when absent. */
  percent?: number;
  /** Seconds the whole stage is estimated to take (the quote's, where the pipeline knows it): before its first unit is done, one unit's estimate is this share. */
  estimatedSeconds?: number;
  /** Where the unit being worked on stands by the clock: added by a reporter while a unit runs (worker/step-clock.ts), never by a pipeline. */
  step?: ProgressStep;
}

/** The unit being worked on in a stage, by the clock: time against an estimate, not a count. */
export interface ProgressStep {
  /** 1-based: `done` + 1 (1 in a stage that does not count). */
  index: number;
  /** Seconds this unit has run. */
  elapsedSeconds: number;
  /** Seconds one unit is estimated to take: the pace measured in this stage, or before its first unit the stage's estimate shared among its units. */
  estimatedSeconds?: number;
}

/** Where a job's progress goes: the daemon's progress messages, the command line's bar. */
export interface ProgressReporter {
  report(progress: JobProgress): void;
  /** Ends the reports; `message` closes them where the reporter has a reader (the command line's last line). */
  close(message?: string): void;
}
