/**
 * What a stream really holds, measured from its demuxed packets: how many there are and the span
 * of time they cover. Container and stream headers (MP4 mvhd/tkhd/mdhd, Matroska Segment Duration
 * and DURATION tags, a WAV data size, MP3 Xing/VBRI frame counts) are claims any writer can edit;
 * the packets are what ffmpeg's demuxer hands the decoders, so pricing and limits read these.
 * Packets the demuxer marks to discard (before an MP4 edit list's start) are not shown, so they
 * are not counted. Pure: the packets come from ffprobe's `-show_entries packet=...` (probe-media.ts).
 */
import { z } from 'zod';

const time = z.union([z.string(), z.number()]).optional();

export const packetSchema = z.object({
  stream_index: z.number().int().nonnegative(),
  pts_time: time,
  dts_time: time,
  duration_time: time,
  /** ffprobe's flag letters: `K` keyframe, `D` discard, `C` corrupt; `_` for unset. */
  flags: z.string().optional(),
});

export type Packet = z.infer<typeof packetSchema>;

/** The packet fields probe-media.ts asks ffprobe for. */
export const PACKET_ENTRIES = 'packet=stream_index,pts_time,dts_time,duration_time,flags';

export interface StreamMeasurement {
  /** Packets shown: frames for video (one coded picture each), coded blocks for audio. */
  packets: number;
  /** From the earliest packet's start to the latest packet's end, seconds. */
  seconds: number;
  /** A packet's typical length, seconds (see typicalSpacing); absent when nothing tells it. */
  spacing?: number;
}

function finite(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : Number.parseFloat(value);
  return Number.isFinite(n) ? n : undefined;
}

/** A packet's duration counts at most this many times the stream's typical spacing (see measureStream). */
export const PACKET_DURATION_CAP = 4;

function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * How long a packet of the stream typically lasts: the median gap between successive packet
 * starts. Timestamps are what places every packet; a packet's duration is a claim the demuxer
 * often takes from a header (a Matroska track's DefaultDuration, an MP4 mdhd for the last
 * sample, an Ogg granule), so the durations' median is the fallback, for a single packet.
 */
export function typicalSpacing(starts: readonly number[], durations: readonly number[]): number | undefined {
  const sorted = [...starts].sort((a, b) => a - b);
  const gaps: number[] = [];
  for (let i = 1; i < sorted.length; i += 1) {
    const gap = (sorted[i] as number) - (sorted[i - 1] as number);
    if (gap > 0) gaps.push(gap);
  }
  return median(gaps) ?? median(durations);
}

/** Frame rates cameras and editors use: a measured rate this close to one of them is that rate. */
const COMMON_RATES: readonly { num: number; den: number }[] = [
  { num: 24000, den: 1001 },
  { num: 24, den: 1 },
  { num: 25, den: 1 },
  { num: 30000, den: 1001 },
  { num: 30, den: 1 },
  { num: 48, den: 1 },
  { num: 50, den: 1 },
  { num: 60000, den: 1001 },
  { num: 60, den: 1 },
  { num: 90, den: 1 },
  { num: 100, den: 1 },
  { num: 120000, den: 1001 },
  { num: 120, den: 1 },
  { num: 240, den: 1 },
];
/** How close (relative) a measured rate must be to a common one to be taken as it. */
const COMMON_RATE_TOLERANCE = 0.03;

/**
 * The highest rate a variable-frame-rate stream runs at: one over the median gap of its fastest
 * stretch (the gaps between successive frame times within a quarter of their 10th percentile, so
 * neither one stray short gap nor a phone's timing jitter sets it), taken as the nearest common
 * rate within 3 %, else in thousandths of a frame per second.
 * Undefined with fewer than two timed frames.
 */
export function highestFrameRate(starts: readonly number[]): { num: number; den: number } | undefined {
  const sorted = [...starts].sort((a, b) => a - b);
  const gaps: number[] = [];
  for (let i = 1; i < sorted.length; i += 1) {
    const gap = (sorted[i] as number) - (sorted[i - 1] as number);
    if (gap > 1e-6) gaps.push(gap);
  }
  if (gaps.length === 0) return undefined;
  gaps.sort((a, b) => a - b);
  // The fastest stretch: gaps within a quarter of the short end (its jitter averages out in the median).
  const short = gaps[Math.floor((gaps.length - 1) * 0.1)] as number;
  const fastest = gaps.filter((gap) => gap <= short * 1.25);
  const rate = 1 / (fastest[Math.floor(fastest.length / 2)] as number);
  let best: { num: number; den: number } | undefined;
  for (const common of COMMON_RATES) {
    const distance = Math.abs(common.num / common.den - rate) / rate;
    if (
      distance <= COMMON_RATE_TOLERANCE &&
      (best === undefined || distance < Math.abs(best.num / best.den - rate) / rate)
    )
      best = common;
  }
  return best ?? { num: Math.max(1, Math.round(rate * 1000)), den: 1000 };
}

/** The timestamps of stream `index`'s shown packets (pts, else dts), seconds. */
export function packetTimes(packets: readonly Packet[], index: number): number[] {
  const times: number[] = [];
  for (const packet of packets) {
    if (packet.stream_index !== index || packet.flags?.includes('D') === true) continue;
    const at = finite(packet.pts_time) ?? finite(packet.dts_time);
    if (at !== undefined) times.push(at);
  }
  return times;
}

/**
 * The packets of stream `index`, measured. `lastDuration` stands in for a packet's missing
 * duration (video: one frame period), so a stream whose packets carry none still spans its last
 * frame. A duration is itself a claim (an Ogg page's edited granule gives the last packet one of
 * 27 hours): none counts more than PACKET_DURATION_CAP times the stream's typical spacing.
 * Undefined when the stream has no timed packet.
 */
export function measureStream(
  packets: readonly Packet[],
  index: number,
  lastDuration = 0,
): StreamMeasurement | undefined {
  const timed: { at: number; duration: number | undefined }[] = [];
  let count = 0;
  for (const packet of packets) {
    if (packet.stream_index !== index || packet.flags?.includes('D') === true) continue;
    count += 1;
    const at = finite(packet.pts_time) ?? finite(packet.dts_time);
    if (at === undefined) continue;
    const duration = finite(packet.duration_time);
    timed.push({ at, duration: duration !== undefined && duration > 0 ? duration : undefined });
  }
  const spacing = typicalSpacing(
    timed.map((p) => p.at),
    timed.flatMap((p) => (p.duration === undefined ? [] : [p.duration])),
  );
  const cap = spacing === undefined ? Number.POSITIVE_INFINITY : PACKET_DURATION_CAP * spacing;
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const { at, duration } of timed) {
    start = Math.min(start, at);
    end = Math.max(end, at + Math.min(duration ?? lastDuration, cap));
  }
  if (count === 0 || !(end > start)) return undefined;
  return spacing === undefined
    ? { packets: count, seconds: end - start }
    : { packets: count, seconds: end - start, spacing };
}

/**
 * Audio packets an encoder adds around the samples it was given: the priming packet(s) of its
 * delay (AAC's 1024 samples, Opus's pre-skip) and the last packet, padded to a whole frame. A
 * container may say which samples to drop (an MP4 edit list and mdhd, Matroska CodecDelay and
 * DiscardPadding), or not at all (AAC in Matroska keeps its priming packet, at 0, the video after
 * it), and what it says is a header: the packets of a file cut at N seconds span up to N s plus
 * about two packets of audio, whoever wrote it.
 */
export const AUDIO_FRAMING_PACKETS = 2;
/**
 * The framing allowed in all, whatever spacing the audio's timestamps show: two packets of the
 * longest frames in use (Opus's 120 ms, AAC's 1024 samples at 8 kHz) fit; audio whose packets
 * were spaced seconds apart does not hide seconds past the video.
 */
export const AUDIO_FRAMING_MAX_SECONDS = 0.5;

/**
 * The file's duration from its chosen streams' measurements. With a video stream, the video's
 * span, lengthened only by audio that runs past it by more than the audio's framing
 * (AUDIO_FRAMING_PACKETS of its spacing, at most AUDIO_FRAMING_MAX_SECONDS): the audio's content
 * is at least its span less the framing, and only content lengthens a file. So a clip cut at N s
 * measures N s in every container, and audio that really goes on past the video still counts.
 * Without video, the audio's whole span (an audio-only input: its length does not price, and the
 * backstop must allow what its decoder delivers). Undefined when neither stream was measured.
 */
export function fileSeconds(
  video: StreamMeasurement | undefined,
  audio: StreamMeasurement | undefined,
): number | undefined {
  if (video === undefined) return audio?.seconds;
  if (audio === undefined) return video.seconds;
  const framing = Math.min(AUDIO_FRAMING_PACKETS * (audio.spacing ?? 0), AUDIO_FRAMING_MAX_SECONDS);
  return Math.max(video.seconds, audio.seconds - framing);
}

/**
 * The backstop's tolerance (docs/contract.md, "The bill is what runs"): a decoder may deliver a
 * frame or two more than the packets measured (a resampled variable frame rate rounds) and an
 * audio decoder a resampler's last block; nothing beyond this is read, whatever the file became.
 */
export const FRAME_TOLERANCE = { frames: 2, share: 0.01 } as const;
export const AUDIO_TOLERANCE_SECONDS = 0.1;

/** Frames a decoder may deliver for a quote that measured `quoted`: the quoted count plus the tolerance. */
export function allowedFrames(quoted: number): number {
  return quoted + Math.max(FRAME_TOLERANCE.frames, Math.ceil(quoted * FRAME_TOLERANCE.share));
}

/** Audio seconds a decoder may deliver for a quote that measured `quoted` seconds. */
export function allowedAudioSeconds(quoted: number): number {
  return quoted + AUDIO_TOLERANCE_SECONDS;
}
