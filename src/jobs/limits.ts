/**
 * The spec's limits (section 8) and accepted formats, as numbers the code compares against.
 * Durations are in seconds, sizes in pixels, text lengths in characters (Unicode code points).
 */
import type { ContainerKind, ImageFormat } from '../media/index.js';

export const MUSIC_SONGS_PER_GENERATION = 2;
export const MUSIC_PROMPT_MAX_CHARS = 500;
export const MUSIC_LYRICS_MAX_CHARS = 5000;
export const MUSIC_STYLE_MAX_CHARS = 1000;
export const MUSIC_TITLE_MAX_CHARS = 80;
/** Not in the spec (docs/contract.md): the style's limit, so no field of a job is unbounded. */
export const MUSIC_NEGATIVE_TAGS_MAX_CHARS = 1000;
export const MUSIC_AUDIO_URL_LIFETIME_DAYS = 14;

export const LIPSYNC_MAX_VIDEO_SECONDS = 30;
export const LIPSYNC_MAX_PROCESSING_SECONDS = 4 * 60;
export const LIPSYNC_RESULT_URL_LIFETIME_DAYS = 7;

/** Output size limit in decimal megapixels (1 MP = 1,000,000 pixels). */
export const IMAGE_MAX_OUTPUT_MEGAPIXELS = 96;
export const IMAGE_MAX_OUTPUT_SIDE_PX = 20_000;

export const VIDEO_UPSCALE_MAX_SECONDS = 60;

export const IMAGE_UPSCALE_FORMATS: readonly ImageFormat[] = ['jpeg', 'png', 'webp'];
export const VIDEO_UPSCALE_CONTAINERS: readonly ContainerKind[] = ['mp4', 'mov', 'mkv'];
export const LIPSYNC_VIDEO_CONTAINERS: readonly ContainerKind[] = ['mp4', 'mov', 'webm', 'm4v', 'gif'];
export const LIPSYNC_AUDIO_CONTAINERS: readonly ContainerKind[] = ['mp3', 'wav', 'aac', 'ogg', 'm4a'];
