/**
 * The video's frames through ffmpeg: the source frames by index, decoded with bounded memory
 * (source-frames.ts, shared by the face pass and the output pass), and the result's encoder
 * (encode.ts). Depends on the audio room (the audio fitted to the timeline).
 */
export * from './encode.js';
export * from './source-frames.js';
