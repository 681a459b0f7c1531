/**
 * The content checks of a quote, in the one wording of this layer: formats come from the probe
 * (file content), never from the URL or file name. The quote runs them; the pipelines, handed a
 * quote's probes, call the same functions rather than repeating them in other words.
 */
import { JobError } from '../errors.js';
import type { AudioStreamInfo, ContainerKind, ImageFormat, MediaInfo, VideoStreamInfo } from '../media/index.js';
// The pure rule, not the folder's index: src/config.ts reads the contract without loading sharp.
import { checkDolbyVision } from '../media/dolby-vision.js';
import { formatName } from '../media/describe.js';
import { expectedText } from './messages.js';
import { durationMilliseconds } from './pricing.js';

/** `MP4, MOV or MKV` */
function formatList(formats: readonly (ContainerKind | ImageFormat)[]): string {
  const names = formats.map(formatName);
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}

export function checkFormat<F extends ContainerKind | ImageFormat>(
  field: string,
  detected: F,
  allowed: readonly F[],
): void {
  if (!allowed.includes(detected)) {
    throw new JobError('PROBE_FAILED', expectedText(field, formatList(allowed), `${formatName(detected)} content`));
  }
}

export function checkVideo(field: string, info: MediaInfo, allowed: readonly ContainerKind[]): VideoStreamInfo {
  checkFormat(field, info.container, allowed);
  if (info.video === undefined) {
    throw new JobError(
      'PROBE_FAILED',
      expectedText(field, 'a video with a video stream', `${formatName(info.container)} content without one`),
    );
  }
  // At the quote, so a stream no pipeline can process is never charged and then refunded.
  checkDolbyVision(info.video.dolbyVision);
  return info.video;
}

export function checkAudio(field: string, info: MediaInfo, allowed: readonly ContainerKind[]): AudioStreamInfo {
  checkFormat(field, info.container, allowed);
  if (info.audio === undefined) {
    throw new JobError(
      'PROBE_FAILED',
      expectedText(field, 'audio with an audio stream', `${formatName(info.container)} content without one`),
    );
  }
  durationMilliseconds(info.durationSeconds, 'the audio duration');
  return info.audio;
}
