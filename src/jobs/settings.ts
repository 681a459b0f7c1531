/**
 * The contract's settings, for src/config.ts: the hardware class a quote's cost estimate is for,
 * the share of a kind's time limit an estimate may use, and the limits on a video input that every
 * kind taking one checks at quote time (work-limits.ts). A kind's own limits are in its room's
 * settings file (the upscaled video's in upscale/video-settings.ts).
 */
import { intSchema, oneOfSetting, positiveInt, setting } from '../settings-table.js';
import { HARDWARE_CLASS_NAMES } from './hardware-classes.js';
import { DEFAULT_WORK_LIMITS } from './work-limits.js';

export const JOBS_SETTINGS = {
  hardwareClass: setting({
    env: 'MEDIA_WORKER_HARDWARE_CLASS',
    schema: oneOfSetting(['auto', ...HARDWARE_CLASS_NAMES]),
    default: 'auto',
    doc: "Hardware class the quote's cost estimate is for (src/jobs/hardware-classes.ts): cpu, h100 (an estimate); auto: h100 when the execution provider that passed the start-up probe is cuda or tensorrt, else cpu.",
  }),
  maxEstimatePercent: setting({
    env: 'MEDIA_WORKER_MAX_ESTIMATE_PERCENT',
    schema: intSchema('an integer from 1 to 100', 1, 100),
    default: String(DEFAULT_WORK_LIMITS.maxEstimatePercentOfLimit),
    doc: "A job whose estimated processing time exceeds this share of its kind's limit (WORKER_WATCHDOG_MS) is refused at quote time (JOB_TOO_COSTLY).",
  }),
  videoMaxInputSide: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_INPUT_SIDE',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxInputSide),
    doc: 'Longest side of a video input (upscale and lip-sync), px; over it: VIDEO_TOO_LARGE.',
  }),
  videoMaxInputPixels: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_INPUT_PIXELS',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxInputPixels),
    doc: "Pixels of one video input frame (default: H.264 level 6.2's frame size); over it: VIDEO_TOO_LARGE.",
  }),
  videoMaxFps: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_FPS',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxFps),
    doc: 'Highest frame rate of a video input (upscale and lip-sync): its average, or for a variable frame rate the highest it runs at, which it is processed at; above it the job is refused (FRAME_RATE_TOO_HIGH), never resampled.',
  }),
} as const;
