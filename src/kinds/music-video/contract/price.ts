/**
 * The music video's price (docs/music-video.md): 2 credits per started second of the decoded
 * audio, at least 20, and the 8-minute limit. Pure: the quote and the gateway's re-check both call it.
 */
import { JobError } from '../../../errors.js';
import { expectedText } from '../../../jobs/messages.js';
import { durationMilliseconds } from '../../../jobs/pricing.js';
import { MUSIC_VIDEO_MAX_AUDIO_SECONDS, type MusicVideoPrice } from './types.js';

export const MUSIC_VIDEO_CREDITS_PER_SECOND = 2;
export const MUSIC_VIDEO_MINIMUM_CREDITS = 20;

/** max(20, ceil(seconds) x 2); PROBE_FAILED for no real duration, AUDIO_TOO_LONG over 8 minutes. */
export function priceMusicVideo(audioSeconds: number): MusicVideoPrice {
  const ms = durationMilliseconds(audioSeconds, 'the audio duration');
  checkMusicVideoAudioLength(ms / 1000);
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
export function checkMusicVideoAudioLength(seconds: number): void {
  if (seconds > MUSIC_VIDEO_MAX_AUDIO_SECONDS) {
    throw new JobError(
      'AUDIO_TOO_LONG',
      expectedText(
        'the audio duration',
        `at most ${MUSIC_VIDEO_MAX_AUDIO_SECONDS} seconds (8 minutes)`,
        `${Math.round(seconds * 1000) / 1000} seconds`,
      ),
    );
  }
}
