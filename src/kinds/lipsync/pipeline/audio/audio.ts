/**
 * Audio for lip-sync: any accepted audio container (MP3, WAV, AAC, OGG, M4A) or the audio track of a
 * video, decoded by ffmpeg straight into memory as 16 kHz mono float32 (what Wav2Lip's features are
 * computed from), plus the pure pieces that make the audio last exactly as long as the timeline.
 *
 * ffmpeg writes raw f32le to a pipe: no temp WAV, and the samples are the decoder's own values
 * (16-bit PCM becomes s / 32768 exactly, the same as librosa's loader). Stereo is averaged to mono by
 * ffmpeg's default downmix.
 */
import { ProcessingError } from '../../../../errors.js';
import {
  resolveFfmpeg,
  safeFileInputArgs,
  ffmpegReason,
  isProcessError,
  runProcess,
  type ContainerKind,
} from '../../../../media/index.js';
import { definedFields } from '../../../../defined-fields.js';

export const LIPSYNC_SAMPLE_RATE = 16_000;
export const DEFAULT_DECODE_TIMEOUT_MS = 60_000;
/** Decoding never returns more than this much audio unless told otherwise (a bound on memory). */
export const DEFAULT_MAX_DECODE_SECONDS = 600;

export interface AudioSource {
  /** Absolute path of a local, sniffed file. */
  path: string;
  container: ContainerKind;
}

export interface DecodeArgsOptions {
  sampleRate?: number;
  /** Stop after this many seconds of audio (ffmpeg's -t): the timeline's trim happens here. */
  maxSeconds?: number;
}

export interface DecodeAudioOptions extends DecodeArgsOptions {
  /** An explicit ffmpeg executable (FFMPEG_PATH); by default resolveFfmpeg() decides. */
  ffmpegPath?: string;
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** Seconds as ffmpeg reads them, to the microsecond, never in exponent notation. */
export function ffmpegSeconds(seconds: number): string {
  return seconds.toFixed(6);
}

function checkPositive(name: string, value: number): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw new RangeError(`Expected ${name} to be a positive number but received ${String(value)}`);
  }
}

/** ffmpeg's arguments: the first audio stream of the file as mono float32 at `sampleRate` on stdout. */
export function decodeAudioArgs(source: AudioSource, opts: DecodeArgsOptions = {}): string[] {
  const sampleRate = opts.sampleRate ?? LIPSYNC_SAMPLE_RATE;
  if (!Number.isInteger(sampleRate) || sampleRate < 1) {
    throw new RangeError(`Expected sampleRate to be a positive integer but received ${String(sampleRate)}`);
  }
  const args = ['-hide_banner', '-nostdin', '-v', 'error', ...safeFileInputArgs(source.path, source.container)];
  args.push('-map', '0:a:0', '-vn', '-sn', '-dn');
  if (opts.maxSeconds !== undefined) {
    checkPositive('maxSeconds', opts.maxSeconds);
    args.push('-t', ffmpegSeconds(opts.maxSeconds));
  }
  args.push('-ac', '1', '-ar', String(sampleRate), '-f', 'f32le', 'pipe:1');
  return args;
}

function reasonFrom(stderrTail: string, path: string): string {
  // "Stream map '0:a:0' matches no streams": said plainly.
  if (stderrTail.includes('matches no streams')) return 'it has no audio stream';
  return ffmpegReason(stderrTail, [[path, 'input']], 2);
}

/**
 * Decodes the audio to mono float32 samples at 16 kHz (or `sampleRate`). A file that cannot be
 * decoded fails the job with LIPSYNC_FAILED (it passed probing, so this is a processing failure);
 * a timeout is worth a retry; a cancelled signal rejects with its reason.
 */
export async function decodeAudio(source: AudioSource, opts: DecodeAudioOptions = {}): Promise<Float32Array> {
  const ffmpeg = resolveFfmpeg(definedFields({ ffmpegPath: opts.ffmpegPath }));
  const sampleRate = opts.sampleRate ?? LIPSYNC_SAMPLE_RATE;
  const seconds = opts.maxSeconds ?? DEFAULT_MAX_DECODE_SECONDS;
  const args = decodeAudioArgs(source, { sampleRate, maxSeconds: seconds });
  const timeoutMs = opts.timeoutMs ?? DEFAULT_DECODE_TIMEOUT_MS;
  let stdout: Buffer;
  try {
    ({ stdout } = await runProcess(ffmpeg, args, {
      timeoutMs,
      // -t bounds the output; the slack covers a resampler's last block.
      maxStdoutBytes: Math.ceil(seconds * sampleRate + sampleRate) * 4,
      ...definedFields({ signal: opts.signal }),
    }));
  } catch (err) {
    if (!isProcessError(err) || err.reason === 'spawn') throw err;
    if (err.reason === 'timeout') {
      throw new ProcessingError(`The audio could not be decoded within ${timeoutMs / 1000} s`, {
        cause: err,
        retryable: true,
      });
    }
    throw new ProcessingError(`The audio could not be decoded: ${reasonFrom(err.stderrTail, source.path)}`, {
      cause: err,
    });
  }
  const count = Math.floor(stdout.length / 4);
  const samples = new Float32Array(count);
  // Copy through a DataView: the Buffer may sit at an odd offset of a pooled ArrayBuffer.
  const view = new DataView(stdout.buffer, stdout.byteOffset, count * 4);
  for (let i = 0; i < count; i++) samples[i] = view.getFloat32(4 * i, true);
  return samples;
}

/** The duration of `samples` in seconds. */
export function samplesToSeconds(count: number, sampleRate = LIPSYNC_SAMPLE_RATE): number {
  return count / sampleRate;
}

/**
 * Exactly round(seconds * sampleRate) samples: the audio cut short, or followed by silence (zeros),
 * the in-memory counterpart of the timeline's audio plan (the features must see the same audio as
 * the result carries).
 */
export function fitSamples(samples: Float32Array, seconds: number, sampleRate = LIPSYNC_SAMPLE_RATE): Float32Array {
  checkPositive('seconds', seconds);
  const length = Math.round(seconds * sampleRate);
  if (length === samples.length) return samples;
  if (length < samples.length) return samples.slice(0, length);
  const out = new Float32Array(length);
  out.set(samples);
  return out;
}

/**
 * The audio filter that gives the encoded result's audio exactly `seconds`: pad with silence to at
 * least that long, then cut at it. For ffmpeg's `-af` (or a filter graph's audio chain).
 */
export function audioFitFilter(seconds: number): string {
  checkPositive('seconds', seconds);
  const d = ffmpegSeconds(seconds);
  return `apad=whole_dur=${d},atrim=end=${d}`;
}
