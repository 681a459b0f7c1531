/**
 * Music: the backends behind one interface (types.ts; MusicGen on ONNX Runtime, ACE-Step's server,
 * Suno-compatible providers), the choice among them, the request and the finishing stage (MP3,
 * cover, metadata). docs/music.md tells the flow.
 */
export * from './backends.js';
export * from './generate.js';
export * from './types.js';
export { finishSongs } from './finish.js';
export { FOLDER_MANIFEST, REQUIRED_FILES } from './musicgen/contract.js';
export { MusicgenBackend } from './musicgen/backend.js';
export { inspectMusicgenFolder } from './musicgen/inspect.js';
export { folderLicence, modelFolder } from './musicgen/folder.js';
export { MUSICGEN_TEST_NAME } from './musicgen/test-model.js';
export { toMusicRequest } from './request.js';
