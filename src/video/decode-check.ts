/**
 * The decode check: the whole video stream decoded once, nothing kept, before any network work.
 * Decoding costs a small share of what the network costs per frame on any host, and it finds what
 * a probe cannot: a bitstream damaged at 93 % of the file fails here, at the start, instead of
 * after 93 % of the frames were upscaled and then refunded. It decodes exactly as the pipeline's
 * decoder does (`strict`: `-xerror` or not, the same whitelists and stream), so a file that passes
 * decodes there too, and its frame count is the pipeline's (the mouth synchronisation's forecast).
 *
 * It is also the backstop's first half: it stops one frame past what the quote allows
 * (`allowedFrames`), so a file that grew after its quote ends the job here, before any work; the
 * decoders' own `-frames:v` cap is the second half (docs/contract.md, "The bill is what runs").
 */
import { JobError } from '../errors.js';
import { argsForFfmpeg } from './ffmpeg-version.js';
import {
  ffmpegReason,
  isProcessError,
  quietFfmpegArgs,
  runProcess,
  safeFileInputArgs,
  type ContainerKind,
} from '../media/index.js';
import { definedFields } from '../defined-fields.js';

export interface DecodeCheckInput {
  ffmpeg: string;
  path: string;
  container: ContainerKind;
  /** Which real video stream (`0:V:n`). */
  videoIndex: number;
  /** Frames the quote allows (allowedFrames of the measured count): one more ends the check. */
  maxFrames: number;
  /**
   * Whether damage the decoder could conceal fails the check (`-xerror`), as it fails the video
   * upscale's decoder; the mouth synchronisation's decoders conceal it, as players do, so its check does too.
   */
  strict: boolean;
  signal?: AbortSignal;
  timeoutMs?: number;
}

export const DEFAULT_DECODE_CHECK_TIMEOUT_MS = 120_000;

/** ffmpeg's arguments: decode the stream to nothing, every frame once, and report the count on stdout. */
export function decodeCheckArgs(
  input: Pick<DecodeCheckInput, 'path' | 'container' | 'videoIndex' | 'maxFrames' | 'strict'>,
): string[] {
  return [
    ...quietFfmpegArgs(),
    ...(input.strict ? ['-xerror'] : []),
    // One decoding thread: frame-threaded H.264 flags a damaged frame corrupt in some runs and
    // not in others; one thread flags it every time, so the check is at least as strict as the
    // pipeline's decoder (and repeatable).
    '-threads',
    '1',
    ...safeFileInputArgs(input.path, input.container),
    '-map',
    `0:V:${input.videoIndex}`,
    '-an',
    '-sn',
    '-dn',
    '-fps_mode',
    'passthrough',
    '-frames:v',
    String(input.maxFrames + 1),
    '-progress',
    'pipe:1',
    // Raw frames to nowhere. Not ffmpeg's default for the null muxer (wrapped_avframe): with it,
    // -xerror lets frames the decoder marked corrupt through, which the pipeline's decoder refuses.
    '-c:v',
    'rawvideo',
    '-f',
    'null',
    '-',
  ];
}

/** The last `frame=N` of ffmpeg's `-progress` report; undefined when it printed none. */
export function parseProgressFrames(report: string): number | undefined {
  let frames: number | undefined;
  for (const match of report.matchAll(/^frame=(\d+)$/gm)) frames = Number(match[1]);
  return frames;
}

/**
 * Decodes the whole video stream and returns its frame count. PROBE_FAILED when the stream cannot
 * be decoded (with ffmpeg's reason), decodes to no frame, or holds more frames than `maxFrames`.
 */
export async function checkVideoDecodes(input: DecodeCheckInput): Promise<number> {
  const timeoutMs = input.timeoutMs ?? DEFAULT_DECODE_CHECK_TIMEOUT_MS;
  let report: string;
  try {
    const { stdout } = await runProcess(input.ffmpeg, await argsForFfmpeg(input.ffmpeg, decodeCheckArgs(input)), {
      timeoutMs,
      maxStdoutBytes: 1024 * 1024,
      ...definedFields({ signal: input.signal }),
    });
    report = stdout.toString('utf8');
  } catch (err) {
    if (!isProcessError(err) || err.reason === 'spawn' || input.signal?.aborted === true) throw err;
    if (err.reason === 'timeout') {
      throw new JobError('PROBE_FAILED', `The video could not be decoded within ${timeoutMs / 1000} s`, {
        cause: err,
        retryable: true,
      });
    }
    throw new JobError(
      'PROBE_FAILED',
      `The video could not be decoded: ${ffmpegReason(err.stderrTail, [[input.path, 'input']], 2)}`,
      {
        cause: err,
      },
    );
  }
  const frames = parseProgressFrames(report) ?? 0;
  if (frames === 0) throw new JobError('PROBE_FAILED', 'The video contains no decodable frames');
  if (frames > input.maxFrames) {
    throw new JobError(
      'PROBE_FAILED',
      `Expected at most ${input.maxFrames} video frames, as quoted, but the file holds more: it changed after its quote and was not processed`,
    );
  }
  return frames;
}
