/**
 * Composing the result: the face crop's geometry (crop.ts), the mouth mask (mask.ts), pasting a
 * generated face back (composite.ts), vendor-lipsync-2-pro's mouth super-resolution (mouth-sr.ts),
 * and the output pass that streams frames through all of it into the encoder (output-pass.ts).
 * Depends on the audio, frames and network rooms.
 */
export * from './composite.js';
export * from './crop.js';
export * from './mask.js';
export * from './mouth-sr.js';
export * from './output-pass.js';
