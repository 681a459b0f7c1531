/**
 * Faces: BlazeFace detection (blazeface.ts), the face pass that decodes and detects (face-pass.ts),
 * tracking (track.ts), the choice of faces to drive (faces.ts) with the active-speaker score
 * (active-speaker.ts), and the per-frame schedule of that choice while detection runs
 * (face-schedule.ts). Depends on the frames room.
 */
export * from './active-speaker.js';
export * from './blazeface.js';
export * from './face-pass.js';
export * from './face-schedule.js';
export * from './faces.js';
export * from './track.js';
