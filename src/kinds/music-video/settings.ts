/**
 * The music-video kind's settings, for src/config.ts. It has none of its own today: it renders with
 * the media layer's ffmpeg (media/settings.ts) and the video layer's encoder (video/settings.ts) into
 * the media layer's temporary directory. A setting of this kind alone is added here, as each kind's
 * are in its own room's settings file.
 */
import type { SettingsTable } from '../../settings-table.js';

export const MUSIC_VIDEO_SETTINGS = {} as const satisfies SettingsTable;
