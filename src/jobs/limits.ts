/**
 * The spec's limits (section 8) and accepted formats, as numbers the code compares against.
 * Durations are in seconds, sizes in pixels, text lengths in characters (Unicode code points).
 */
import type { ContainerKind, ImageFormat } from '../media/index.js';

/** Output size limit in decimal megapixels (1 MP = 1,000,000 pixels). */
export const IMAGE_MAX_OUTPUT_MEGAPIXELS = 96;
export const IMAGE_MAX_OUTPUT_SIDE_PX = 20_000;

export const VIDEO_UPSCALE_MAX_SECONDS = 60;

export const IMAGE_UPSCALE_FORMATS: readonly ImageFormat[] = ['jpeg', 'png', 'webp'];
export const VIDEO_UPSCALE_CONTAINERS: readonly ContainerKind[] = ['mp4', 'mov', 'mkv'];
