/**
 * The price of a music video: 2 credits per started second of the measured audio, at least 20.
 * Pure, in the billing rules of jobs/pricing.ts (the duration rounded to whole milliseconds first,
 * so 12.0000001 s bills 12 seconds; billed seconds are the ceiling of that). Audio over 8 minutes
 * is AUDIO_TOO_LONG, compared on the same rounded value.
 */
import { JobError } from '../errors.js';
import { durationMilliseconds, expectedText } from '../jobs/index.js';
import { MUSIC_VIDEO_MAX_AUDIO_SECONDS } from './contract.js';

export const MUSIC_VIDEO_CREDITS_PER_SECOND = 2;
export const MUSIC_VIDEO_MINIMUM_CREDITS = 20;

export interface MusicVideoPrice {
  creditsUsed: number;
  /** The measured duration rounded to milliseconds: what is billed, echoed and limit-checked. */
  durationSeconds: number;
  billedSeconds: number;
  creditsPerSecond: number;
  minimumCredits: number;
}

/** max(20, ceil(seconds) × 2); PROBE_FAILED for no real duration, AUDIO_TOO_LONG over 8 minutes. */
export function priceMusicVideo(audioSeconds: number): MusicVideoPrice {
  const ms = durationMilliseconds(audioSeconds, 'the audio duration');
  checkAudioLength(ms / 1000);
  const billed = Math.ceil(ms / 1000);
  return {
    creditsUsed: Math.max(MUSIC_VIDEO_MINIMUM_CREDITS, billed * MUSIC_VIDEO_CREDITS_PER_SECOND),
    durationSeconds: ms / 1000,
    billedSeconds: billed,
    creditsPerSecond: MUSIC_VIDEO_CREDITS_PER_SECOND,
    minimumCredits: MUSIC_VIDEO_MINIMUM_CREDITS,
  };
}

/** AUDIO_TOO_LONG past 8 minutes (seconds already rounded to milliseconds, or a decoder's count). */
export function checkAudioLength(seconds: number): void {
  if (seconds > MUSIC_VIDEO_MAX_AUDIO_SECONDS) {
    throw new JobError(
      'AUDIO_TOO_LONG',
      expectedText('the audio duration', `at most ${MUSIC_VIDEO_MAX_AUDIO_SECONDS} seconds (8 minutes)`, `${Math.round(seconds * 1000) / 1000} seconds`),
    );
  }
}
