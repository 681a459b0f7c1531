/**
 * The image-upscale kind's settings, for src/config.ts. It has none of its own today: its network
 * is chosen by MEDIA_WORKER_SR_MODELS (inference/settings.ts), its download cap is the media
 * layer's, and its size limits are the contract's constants (jobs/). A setting of this kind alone
 * is added here, as each kind's are in its own settings file (upscale/video-settings.ts for video).
 */
import type { SettingsTable } from '../../settings-table.js';

export const IMAGE_UPSCALE_SETTINGS = {} as const satisfies SettingsTable;
