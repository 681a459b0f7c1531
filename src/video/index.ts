/**
 * What every video pipeline shares (the upscale and the mouth synchronisation): decoding to raw RGB frames and the frame
 * reader, the bounded frame queue, the frame pipe into an encoder and its end, encoder choice and
 * codec arguments, probing extras, frame geometry and rates, whose fault a failed ffmpeg is, and the
 * stage group that stops a pipeline's stages together. Dependencies: media -> video -> the video pipelines.
 */
export * from './colour.js';
export * from './decode-check.js';
export * from './ffmpeg-failure.js';
export * from './ffmpeg-version.js';
export * from './frame-pipe.js';
export * from './frame-queue.js';
export * from './settings.js';
export * from './stage-group.js';
export * from './result-container.js';
export * from './stream-map.js';
export * from './video-args.js';
export * from './video-encoders.js';
export * from './video-frame-reader.js';
export * from './video-geometry.js';
export * from './video-probe.js';
