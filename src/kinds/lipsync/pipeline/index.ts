/**
 * Lip-sync: the one way into src/kinds/lipsync/pipeline/ from the rest of the project. The flow (`lipsyncFile`,
 * pipeline.ts; the two passes, passes.ts) is told in docs/lipsync.md, with the rooms: audio/,
 * frames/, faces/, network/, compose/. Rooms depend one way (audio <- frames <- faces <- network <-
 * compose <- the flow) and use the top-level leaves types.ts, timeline.ts and settings.ts (read by
 * src/config.ts without loading the lip-sync runtime).
 */
export * from './audio/index.js';
export * from './compose/index.js';
export * from './faces/index.js';
export * from './frames/index.js';
export * from './network/index.js';
export * from './pipeline.js';
export * from '../settings.js';
export * from './timeline.js';
export * from './types.js';
export * from './backends/choose.js';
export * from './backends/types.js';
export { SyncBackend, type SyncBackendOptions } from './sync/backend.js';
export { idempotencyKey as syncIdempotencyKey } from './sync/api.js';
export * from './musetalk/index.js';
