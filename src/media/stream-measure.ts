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
}

function finite(value: string | number | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : Number.parseFloat(value);
  return Number.isFinite(n) ? n : undefined;
}

/** A packet's duration counts at most this many times the stream's median one (see measureStream). */
export const PACKET_DURATION_CAP = 4;

function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/**
 * The packets of stream `index`, measured. `lastDuration` stands in for a packet's missing
 * duration (video: one frame period), so a stream whose packets carry none still spans its last
 * frame. A duration is itself a claim (an Ogg page's edited granule gives the last packet one of
 * 27 hours): none counts more than PACKET_DURATION_CAP times the stream's median. Undefined when
 * the stream has no timed packet.
 */
export function measureStream(packets: readonly Packet[], index: number, lastDuration = 0): StreamMeasurement | undefined {
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
  const typical = median(timed.flatMap((p) => (p.duration === undefined ? [] : [p.duration])));
  const cap = typical === undefined ? Number.POSITIVE_INFINITY : PACKET_DURATION_CAP * typical;
  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const { at, duration } of timed) {
    start = Math.min(start, at);
    end = Math.max(end, at + Math.min(duration ?? lastDuration, cap));
  }
  if (count === 0 || !(end > start)) return undefined;
  return { packets: count, seconds: end - start };
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
