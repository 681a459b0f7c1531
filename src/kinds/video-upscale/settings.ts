/**
 * The video-upscale kind's settings, for src/config.ts: the limits on what an upscaled video may be
 * (checked at quote time, jobs/work-limits.ts) and how many frames are upscaled at once. Pure: reading
 * them loads no ONNX Runtime or ffmpeg plumbing. The encoder is the video layer's (video/settings.ts).
 */
import { DEFAULT_WORK_LIMITS } from '../../jobs/work-limits.js';
import { positiveInt, setting } from '../../settings-table.js';

export const VIDEO_UPSCALE_SETTINGS = {
  videoFramesInFlight: setting({
    env: 'MEDIA_WORKER_VIDEO_FRAMES_IN_FLIGHT',
    schema: positiveInt,
    default: '2',
    doc: 'Video frames upscaled at once, their tiles batched together; 3-4 lets batches form on a GPU.',
  }),
  videoMaxOutputSide: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_OUTPUT_SIDE',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxOutputSide),
    doc: 'Longest side of an upscaled video, px; over it: OUTPUT_TOO_LARGE.',
  }),
  videoMaxOutputPixels: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_OUTPUT_PIXELS',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxOutputPixels),
    doc: "Pixels of one upscaled video frame (default: H.264 level 6.2's frame size, 8192x4320 fits); over it: OUTPUT_TOO_LARGE.",
  }),
  videoMaxJobOutputPixels: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_JOB_OUTPUT_PIXELS',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxJobOutputPixels),
    doc: 'Output pixels of one video upscale job, all frames together (default: 60 s of 3840x2160 at 60 fps fits); over it: OUTPUT_TOO_LARGE.',
  }),
} as const;
