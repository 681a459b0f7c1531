/**
 * The music video's quote: fetch, measure and check the audio, then the cover. Inputs are measured,
 * never believed: the audio's format is its content's (probe-media.ts sniffs it), its length is
 * what its decoder delivers (every sample counted, `-xerror`, so damaged audio fails here, before
 * anything is charged or rendered), and the cover is sniffed and decoded once (probe-image.ts).
 *
 * Order (first failure wins): fetch the audio, probe it, format and stream, the probe's packet
 * span against the 8-minute limit (a long file is refused before it is decoded), decode it, price
 * the decoded length; then fetch and probe the cover. The audio goes first because its length
 * decides the refusal and the price: an over-long song costs no cover download.
 */
import { JobError } from '../../../errors.js';
import { checkAudio, checkFormat } from '../../../jobs/input-checks.js';
import { formatDuration } from '../../../jobs/quote-parts.js';
import type { QuoteDeps } from '../../../jobs/quote-types.js';
import {
  ffmpegReason,
  isProcessError,
  quietFfmpegArgs,
  resolveFfmpeg,
  safeFileInputArgs,
  spawnProcess,
  type ContainerKind,
} from '../../../media/ffmpeg-light.js';
import { definedFields } from '../../../defined-fields.js';
import {
  MUSIC_VIDEO_AUDIO_CONTAINERS,
  MUSIC_VIDEO_IMAGE_FORMATS,
  MUSIC_VIDEO_MAX_AUDIO_SECONDS,
  MUSIC_VIDEO_MODEL,
  type MusicVideoJob,
  type QuotedMusicVideoJob,
} from './types.js';
import { checkMusicVideoAudioLength, priceMusicVideo } from './price.js';

export const DEFAULT_AUDIO_DECODE_TIMEOUT_MS = 120_000;
/** Decoding stops this far past the limit: enough to say "too long", never hours of a lying file. */
const DECODE_SLACK_SECONDS = 1;

export interface MeasureOptions {
  ffmpegPath?: string;
  signal?: AbortSignal;
  decodeTimeoutMs?: number;
}

/** Prices a music video job from its measured inputs (order in the module comment). */
export async function quoteMusicVideo(
  job: MusicVideoJob,
  deps: QuoteDeps,
  opts: MeasureOptions = {},
): Promise<QuotedMusicVideoJob> {
  const { input } = job;
  const { signal } = opts;
  signal?.throwIfAborted();
  const audio = await deps.localize(input.audio_url, 'audio', signal);
  signal?.throwIfAborted();
  const audioInfo = await deps.probeMedia(audio.path);
  const stream = checkAudio('audio_url', audioInfo, MUSIC_VIDEO_AUDIO_CONTAINERS);
  checkMusicVideoAudioLength(audioInfo.durationSeconds);
  const sampleRate = stream.sampleRate > 0 ? stream.sampleRate : 48_000;
  const decodedSeconds = await measureAudioSeconds(
    { path: audio.path, container: audioInfo.container, sampleRate },
    opts,
  );
  const price = priceMusicVideo(decodedSeconds);
  signal?.throwIfAborted();

  const image = await deps.localize(input.image_url, 'image', signal);
  signal?.throwIfAborted();
  const imageInfo = await deps.probeImage(image.path);
  checkFormat('image_url', imageInfo.format, MUSIC_VIDEO_IMAGE_FORMATS);

  return {
    kind: 'music-video',
    job,
    quote: {
      model: MUSIC_VIDEO_MODEL,
      creditsUsed: price.creditsUsed,
      input: {
        ...input,
        detected_duration: formatDuration(price.durationSeconds),
        billed_seconds: price.billedSeconds,
        credits_per_second: price.creditsPerSecond,
      },
    },
    price,
    audioSampleRate: sampleRate,
    inputs: { audio, image },
    probes: { audio: audioInfo, image: imageInfo },
  };
}

export interface AudioToMeasure {
  /** Absolute path of a local, sniffed file. */
  path: string;
  container: ContainerKind;
  /** The stream's rate: samples are counted at it (a stream that changes rate is resampled to it). */
  sampleRate: number;
}

/**
 * The audio input as both the measure and the render read it: a packet the demuxer could only read
 * part of (a file cut short of what its headers say) is dropped, not decoded, so a cut file is
 * measured and rendered as the audio that is there, and decoding errors are left to mean damage.
 */
export function audioInputArgs(audio: Pick<AudioToMeasure, 'path' | 'container'>): string[] {
  return ['-fflags', '+discardcorrupt', ...safeFileInputArgs(audio.path, audio.container)];
}

/**
 * ffmpeg's arguments: decode the first audio stream, stopping at the first decoding error
 * (`-xerror`: damaged bytes inside the stream), as one channel of 8-bit samples at `sampleRate`
 * on stdout, so one byte is one sample. Stops `DECODE_SLACK_SECONDS` past the limit.
 */
export function audioMeasureArgs(audio: AudioToMeasure, maxSeconds = MUSIC_VIDEO_MAX_AUDIO_SECONDS): string[] {
  if (!Number.isInteger(audio.sampleRate) || audio.sampleRate < 1) {
    throw new RangeError(`Expected sampleRate to be a positive integer but received ${String(audio.sampleRate)}`);
  }
  return [
    ...quietFfmpegArgs(),
    '-xerror',
    ...audioInputArgs(audio),
    '-map',
    '0:a:0',
    '-vn',
    '-sn',
    '-dn',
    '-t',
    String(maxSeconds + DECODE_SLACK_SECONDS),
    '-ac',
    '1',
    '-ar',
    String(audio.sampleRate),
    '-c:a',
    'pcm_u8',
    '-f',
    'u8',
    'pipe:1',
  ];
}

/**
 * The audio's length as its decoder delivers it: samples counted (not kept) over sampleRate.
 * PROBE_FAILED when it does not decode cleanly or holds no sample; AUDIO_TOO_LONG past 8 minutes.
 */
export async function measureAudioSeconds(audio: AudioToMeasure, opts: MeasureOptions = {}): Promise<number> {
  const ffmpeg = resolveFfmpeg(definedFields({ ffmpegPath: opts.ffmpegPath }));
  const timeoutMs = opts.decodeTimeoutMs ?? DEFAULT_AUDIO_DECODE_TIMEOUT_MS;
  const proc = spawnProcess(ffmpeg, audioMeasureArgs(audio), {
    timeoutMs,
    stdout: 'pipe',
    ...definedFields({ signal: opts.signal }),
  });
  let samples = 0;
  proc.stdout?.on('data', (chunk: Buffer) => {
    samples += chunk.length;
  });
  try {
    await proc.done;
  } catch (err) {
    if (!isProcessError(err) || err.reason === 'spawn') throw err;
    if (err.reason === 'timeout') {
      throw new JobError('PROBE_FAILED', `The audio could not be decoded within ${timeoutMs / 1000} s`, {
        cause: err,
        retryable: true,
      });
    }
    throw new JobError(
      'PROBE_FAILED',
      `The audio could not be decoded: ${ffmpegReason(err.stderrTail, [[audio.path, 'input']], 2)}`,
      { cause: err },
    );
  }
  if (samples === 0) throw new JobError('PROBE_FAILED', 'The audio decodes to no sound at all');
  const seconds = samples / audio.sampleRate;
  checkMusicVideoAudioLength(seconds);
  return seconds;
}
