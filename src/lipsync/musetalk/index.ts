/**
 * MuseTalk 1.5 (TMElyralab/MuseTalk, code MIT, weights for any purpose): its preprocessing as the
 * reference computes it. whisper-mel.ts: the Whisper encoder's log-mel input; audio-window.ts: each
 * video frame's window of the encoder's hidden states.
 */
export * from './audio-window.js';
export * from './whisper-mel.js';
export * from './blend.js';
export * from './crop.js';
export * from './face-geometry.js';
