/**
 * Music: the backends behind one interface (types.ts; MusicGen on ONNX Runtime, ACE-Step's server,
 * Suno-compatible providers), the choice among them, the request and the finishing stage (MP3,
 * cover, metadata). docs/music.md tells the flow.
 */
export * from './backends.js';
export * from './generate.js';
export * from './types.js';
export { seededRandom } from './musicgen/sampling.js';
