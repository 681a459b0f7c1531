/**
 * What every video pipeline shares (upscale and lip-sync): decoding to raw RGB frames and the frame
 * reader, the bounded frame queue, encoder choice and codec arguments, probing extras, frame
 * geometry and rates, and ffmpeg failure reasons. Dependencies: media -> video -> {upscale, lipsync}.
 */
export * from './frame-queue.js';
export * from './video-args.js';
export * from './video-encoders.js';
export * from './video-errors.js';
export * from './video-frame-reader.js';
export * from './video-geometry.js';
export * from './video-probe.js';
