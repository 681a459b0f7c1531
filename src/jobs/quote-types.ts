/**
 * The shapes of a quote that every kind shares: what a kind's `quote` needs (its I/O and the
 * worker's policy as the kind reads it), what it answers besides its own echo (the estimate, what
 * it measured), and the error body. Each kind's echo and quoted job are in its room
 * (kinds/<kind>/types.ts); the worker's whole policy, with every kind's part, is the registry's
 * (QuotePolicy, kinds/index.ts). Names no kind.
 */
import type { JobError } from '../errors.js';
import type { SrNetworkCost } from './cost-model.js';
import type { HardwareProfile } from './hardware-classes.js';
import type { WorkLimits } from './work-limits.js';
import type { UpscaleFactor } from './types.js';
import type { LocalInput, ImageInfo, MediaInfo } from '../media/index.js';

export type InputKind = 'image' | 'video' | 'audio';

export interface QuoteDeps {
  /** Makes a job input local (safe download, or a CLI path); throws JobError (FETCH_FAILED, INPUT_TOO_LARGE, INVALID_URL). */
  localize(source: string, kind: InputKind, signal?: AbortSignal): Promise<LocalInput>;
  /** Throws JobError PROBE_FAILED on unreadable input. */
  probeImage(path: string): Promise<ImageInfo>;
  /** Throws JobError PROBE_FAILED on unreadable input. */
  probeMedia(path: string): Promise<MediaInfo>;
  /** The FFMPEG_PATH setting, for a quote that decodes an input with ffmpeg to measure it; unset: ffmpeg on the PATH. */
  ffmpegPath?: string;
}

/**
 * The worker's own rules on top of the spec's, as the descriptor of kind `K` reads them: work limits
 * and the cost estimate on this worker's hardware class. The whole policy (QuotePolicy, the
 * registry's: this plus each kind's own part) is built once from the settings
 * (src/app/quote-policy.ts) and shared by the quote service, `run`, `quote` and `serve`, so they
 * all refuse the same jobs. A kind with a part of its own reads it as `QuotePolicyOf<K> & { kinds: ... }`.
 */
export interface QuotePolicyOf<K extends string> {
  limits: WorkLimits;
  hardware: HardwareProfile;
  /** Longest processing time per kind, in seconds: the daemon's watchdog (WORKER_WATCHDOG_MS). */
  timeLimitSeconds: Readonly<Record<K, number>>;
  /** The super-resolution network that would serve a job, with its cost (reads its manifest). */
  srNetwork(kind: 'image' | 'video', factor: UpscaleFactor): Promise<SrNetworkCost>;
}

/** What the quote shows of the cost estimate (top level, beside `creditsUsed`), with a policy. */
export interface QuoteEstimate {
  /** Frames processed (1 for an image; the output's frames where they differ from the input's). */
  estimated_frames?: number;
  /** Estimated processing seconds on `hardware_class`. */
  estimated_seconds?: number;
  hardware_class?: string;
}

/**
 * What the quote measured, beside the spec's echo: the figures that price and bound the job, read
 * from the streams' packets (never from headers), so anyone can see what was billed and why. A
 * header that claims another duration is shown as `declared_seconds`: the streams won.
 */
export interface MeasuredStreams {
  from: 'streams';
  video?: { seconds: number; frames: number; frame_rate: string };
  audio?: { seconds: number };
  declared_seconds?: number;
}

export interface ErrorBody {
  error: { code: JobError['code']; status: number; message: string };
}
