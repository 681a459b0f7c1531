/**
 * The container a video upscale's result is written in (pure). Matroska (and WebM, its subset) in
 * gives Matroska out: it carries every stream such a file can hold (any audio codec, text and
 * bitmap subtitles, attachments such as fonts, chapters, tags), where MP4 would drop or convert
 * some. Everything else gives MP4. The rule reads the input's container only, never its streams, so
 * the result's name is known before the job runs and is the same for every file of one container
 * (docs/contract.md, "Video fidelity"). The mouth-synchronising pipeline always writes MP4: it keeps
 * no stream of the source but the picture (the spec's result of that kind is an MP4).
 */
import type { ContainerKind } from '../media/index.js';

export type ResultContainer = 'mp4' | 'mkv';

export interface ResultFormat {
  container: ResultContainer;
  /** The result file's extension, without the dot. */
  ext: ResultContainer;
  /** ffmpeg's muxer name (`-f`). */
  muxer: 'mp4' | 'matroska';
  /** The media type the file is served as. */
  mediaType: 'video/mp4' | 'video/x-matroska';
}

const MP4: ResultFormat = { container: 'mp4', ext: 'mp4', muxer: 'mp4', mediaType: 'video/mp4' };
const MKV: ResultFormat = { container: 'mkv', ext: 'mkv', muxer: 'matroska', mediaType: 'video/x-matroska' };

/** The result's format for an input of container `input`. */
export function videoResultFormat(input: ContainerKind): ResultFormat {
  return input === 'mkv' || input === 'webm' ? MKV : MP4;
}

/** The format a container's results are written in. */
export function resultFormatOf(container: ResultContainer): ResultFormat {
  return container === 'mkv' ? MKV : MP4;
}
