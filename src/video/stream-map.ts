/**
 * Which of the input's streams a video result keeps, and how (pure). The result's container follows
 * the input's (result-container.ts): Matroska for Matroska and WebM, MP4 otherwise
 * (docs/contract.md, "Video fidelity").
 *
 * Into Matroska, every stream is copied as it is: every audio track whatever its codec, every
 * subtitle track (text and bitmap: SubRip, ASS, WebVTT, Blu-ray PGS, DVB, DVD), attachments (fonts).
 * Cover art goes back as the image attachment it came as. Left out: data streams (ffmpeg's Matroska
 * muxer has no data tracks).
 *
 * Into MP4, each stream goes in as MP4 can carry it:
 *
 * - Every audio track, in order, with its language, title and dispositions: copied untouched when
 *   MP4 carries its codec (MP4_COPY_AUDIO_CODECS), otherwise re-encoded to AAC at a bitrate for its
 *   channel count.
 * - Text subtitles (SubRip, ASS/SSA, WebVTT, mov_text) as MP4's own timed text (mov_text; ASS
 *   styling is not kept); DVD bitmap subtitles copied. Other bitmap subtitles (Blu-ray PGS, DVB)
 *   have no MP4 mapping in this ffmpeg and are left out, said in the log and the result's stats.
 * - Cover art (an attached JPEG, PNG or BMP picture) copied as cover art, never upscaled.
 * - Not kept: data streams other than timecode (camera telemetry such as GoPro GPMF, which holds GPS).
 *
 * Both: a timecode track (MP4/MOV `tmcd`) is written again with the same start (a new `tmcd` track
 * in MP4, the video track's `timecode` tag in Matroska), as the picture it counts is new. Chapters,
 * the file's global tags (title, creation time, comment, ...) and each kept stream's own tags
 * (language, title, ...) are kept, except location: phone clips carry the place they were shot,
 * which is personal data the customer may not know is in the file, so every tag whose name says
 * location or GPS is removed, from the file and from every stream.
 */
import {
  type AudioStreamInfo,
  type ContainerKind,
  fileInput,
  quietFfmpegArgs,
  safeFileInputArgs,
} from '../media/index.js';
import type { ResultContainer } from './result-container.js';

export type StreamType = 'video' | 'audio' | 'subtitle' | 'data' | 'attachment' | 'other';

export interface SourceStream {
  /** The stream's index in the file (ffmpeg's `1:<index>`). */
  index: number;
  type: StreamType;
  codec: string;
  channels?: number;
  /** An attached picture (cover art), not a video track. */
  coverArt: boolean;
  tags: Record<string, string>;
}

interface RawStream {
  index?: number | undefined;
  codec_type?: string | undefined;
  codec_name?: string | undefined;
  channels?: number | undefined;
  disposition?: Record<string, number> | undefined;
  tags?: Record<string, string> | undefined;
}

const TYPES: readonly StreamType[] = ['video', 'audio', 'subtitle', 'data', 'attachment'];

export function sourceStream(raw: RawStream, position: number): SourceStream {
  const type = (TYPES as readonly string[]).includes(raw.codec_type ?? '') ? (raw.codec_type as StreamType) : 'other';
  const stream: SourceStream = {
    index: raw.index ?? position,
    type,
    codec: raw.codec_name ?? 'unknown',
    coverArt: type === 'video' && raw.disposition?.['attached_pic'] === 1,
    tags: raw.tags ?? {},
  };
  if (raw.channels !== undefined) stream.channels = raw.channels;
  return stream;
}

/**
 * Audio codecs copied into the MP4 unchanged. These have registered MP4 sample entries and play in
 * browsers, QuickTime and TVs alike. Left out on purpose: Opus and FLAC (the MP4 mappings exist,
 * but ffmpeg 5 marks FLAC-in-MP4 experimental and Apple's players only recently learned either),
 * Vorbis and PCM (no standard MP4 mapping); those are re-encoded to AAC.
 */
export const MP4_COPY_AUDIO_CODECS: readonly string[] = ['aac', 'mp3', 'ac3', 'eac3', 'alac'];

export type AudioPlan =
  { mode: 'none' } | { mode: 'copy'; codec: string } | { mode: 'aac'; bitrate: number; from: string };

export function audioPlan(audio: Pick<AudioStreamInfo, 'codec' | 'channels'> | undefined): AudioPlan {
  if (audio === undefined) return { mode: 'none' };
  if (MP4_COPY_AUDIO_CODECS.includes(audio.codec)) return { mode: 'copy', codec: audio.codec };
  // 96 kb/s per channel up to stereo's 192, then 64 kb/s for each further channel.
  const channels = Math.max(1, audio.channels);
  const bitrate = channels <= 2 ? 96_000 * channels : 192_000 + 64_000 * (channels - 2);
  return { mode: 'aac', bitrate, from: audio.codec };
}

/** Text subtitle codecs, converted to MP4's timed text. */
const TEXT_SUBTITLES = new Set(['subrip', 'srt', 'ass', 'ssa', 'webvtt', 'mov_text', 'text']);
/** Bitmap subtitles MP4 carries as they are. */
const COPY_SUBTITLES = new Set(['dvd_subtitle']);
/** Cover art MP4 carries (its `covr` atom takes JPEG, PNG and BMP). */
const COVER_CODECS = new Set(['mjpeg', 'png', 'bmp']);

/** Tag names of a stream that say where it was made, to remove from its copy. */
interface Located {
  locationTags?: string[];
}

export type KeptStream = (
  | { type: 'audio'; index: number; plan: Exclude<AudioPlan, { mode: 'none' }>; title?: string }
  | { type: 'subtitle'; index: number; mode: 'text' | 'copy'; title?: string }
  /** Cover art; into Matroska, written as the image attachment Matroska keeps covers in. */
  | { type: 'cover'; index: number; attachment?: { filename: string; mimetype: string } }
  | { type: 'attachment'; index: number }
  /** A timecode track (MP4/MOV `tmcd`), written again from its start time: the picture is new, so the track cannot be copied. */
  | { type: 'timecode'; index: number; start: string }
) &
  Located;

export interface DroppedStream {
  index: number;
  type: StreamType;
  codec: string;
  reason: string;
}

export interface StreamMap {
  /** The container the kept streams are written in. */
  container: ResultContainer;
  kept: KeptStream[];
  dropped: DroppedStream[];
}

/** A track's title (Matroska's `title`, an MP4 handler name other than ffmpeg's and players' generic ones). */
function titleOf(s: SourceStream): { title?: string } {
  const title = s.tags['title'] ?? s.tags['handler_name'];
  if (title === undefined || title.trim() === '' || GENERIC_HANDLERS.test(title)) return {};
  return { title };
}

/** A stream's location tags, when it has any. */
function locatedOf(s: SourceStream): Located {
  const names = Object.keys(s.tags).filter(isLocationTag);
  return names.length === 0 ? {} : { locationTags: names };
}

/** Handler names muxers write by themselves, which name no track. */
const GENERIC_HANDLERS =
  /^(Sound|Video|Subtitle|Text|Core Media (Audio|Video|Text))\s*(Handler|Media Handler)?$|^(SoundHandler|VideoHandler|SubtitleHandler)$/i;

type Verdict = KeptStream | { drop: string };

/** What MP4 does with one stream. */
function intoMp4(s: SourceStream): Verdict {
  switch (s.type) {
    case 'audio': {
      const plan = audioPlan({ codec: s.codec, channels: s.channels ?? 2 });
      return plan.mode === 'none' ? { drop: 'no audio plan' } : { type: 'audio', index: s.index, plan, ...titleOf(s) };
    }
    case 'subtitle':
      if (TEXT_SUBTITLES.has(s.codec)) return { type: 'subtitle', index: s.index, mode: 'text', ...titleOf(s) };
      if (COPY_SUBTITLES.has(s.codec)) return { type: 'subtitle', index: s.index, mode: 'copy', ...titleOf(s) };
      return { drop: `MP4 cannot carry ${s.codec} subtitles` };
    case 'video':
      if (s.coverArt && COVER_CODECS.has(s.codec)) return { type: 'cover', index: s.index };
      return { drop: s.coverArt ? `MP4 cover art cannot be ${s.codec}` : 'only one video track is upscaled' };
    case 'data':
      return {
        drop: 'data streams other than timecode (camera telemetry such as GoPro GPMF, which holds GPS) are not kept',
      };
    case 'attachment':
      return { drop: 'MP4 cannot carry attachments' };
    case 'other':
      return { drop: 'unknown stream type' };
  }
}

/** What Matroska does with one stream: a copy of everything it has a track or an attachment for. */
function intoMatroska(s: SourceStream): Verdict {
  switch (s.type) {
    case 'audio':
      return { type: 'audio', index: s.index, plan: { mode: 'copy', codec: s.codec } };
    case 'subtitle':
      // MP4's own timed text has no Matroska mapping; as SubRip it keeps its text and times.
      return { type: 'subtitle', index: s.index, mode: s.codec === 'mov_text' ? 'text' : 'copy' };
    case 'video':
      if (!s.coverArt) return { drop: 'only one video track is upscaled' };
      if (!COVER_CODECS.has(s.codec)) return { drop: `cover art cannot be ${s.codec}` };
      // ffmpeg 5.1's Matroska muxer would write an attached picture as a second video track: the
      // pipeline takes the image out and attaches it (coverExtractArgs, streamMapArgs).
      return { type: 'cover', index: s.index, attachment: coverAttachment(s) };
    case 'attachment':
      return { type: 'attachment', index: s.index };
    case 'data':
      return { drop: 'Matroska cannot carry data streams (camera telemetry)' };
    case 'other':
      return { drop: 'unknown stream type' };
  }
}

/** A SMPTE timecode as ffmpeg writes and reads it (`01:02:03:04`, `;` for drop frame); anything else is not passed on. */
const TIMECODE = /^\d{2}:\d{2}:\d{2}[:;.]\d{2,3}$/;

/** The start timecode of a timecode track (its own tag, else the picture's), when it is one ffmpeg can write. */
function timecodeOf(s: SourceStream, picture: SourceStream | undefined): string | undefined {
  const start = s.tags['timecode'] ?? picture?.tags['timecode'];
  return start !== undefined && TIMECODE.test(start) ? start : undefined;
}

/** Matroska's cover art convention names four images (cover, small_cover, and their landscape forms); twice that is plenty. */
export const MAX_MATROSKA_COVERS = 8;

const COVER_TYPES: Readonly<Record<string, { mimetype: string; ext: string }>> = {
  mjpeg: { mimetype: 'image/jpeg', ext: 'jpg' },
  png: { mimetype: 'image/png', ext: 'png' },
  bmp: { mimetype: 'image/bmp', ext: 'bmp' },
};

/** A cover's attachment name and media type: its own where Matroska gave it them, else by its codec. */
function coverAttachment(s: SourceStream): { filename: string; mimetype: string } {
  const type = COVER_TYPES[s.codec] ?? { mimetype: 'application/octet-stream', ext: 'bin' };
  const filename = s.tags['filename'];
  return {
    filename: filename !== undefined && filename.trim() !== '' ? filename : `cover.${type.ext}`,
    mimetype: type.mimetype,
  };
}

/** What becomes of every stream but the one upscaled (`videoIndex` among the real video streams), in `container`. */
export function streamMap(
  streams: readonly SourceStream[],
  videoIndex: number,
  container: ResultContainer = 'mp4',
): StreamMap {
  const kept: KeptStream[] = [];
  const dropped: DroppedStream[] = [];
  const picture = streams.filter((s) => s.type === 'video' && !s.coverArt)[videoIndex];
  const into = container === 'mkv' ? intoMatroska : intoMp4;
  let timecode = false;
  let covers = 0;
  for (const s of streams) {
    if (s === picture) continue;
    const start = s.type === 'data' && s.tags['timecode'] !== undefined ? timecodeOf(s, picture) : undefined;
    if (start !== undefined && !timecode) {
      // One timecode for the one picture: MP4 writes it as a new tmcd track, Matroska as the video's tag.
      kept.push({ type: 'timecode', index: s.index, start });
      timecode = true;
      continue;
    }
    // Each Matroska cover costs an ffmpeg run to take it out: a file listing hundreds is not a cover.
    const verdict =
      s.coverArt && container === 'mkv' && covers >= MAX_MATROSKA_COVERS
        ? { drop: `more than ${MAX_MATROSKA_COVERS} cover images` }
        : into(s);
    if ('type' in verdict && verdict.type === 'cover') covers += 1;
    if ('drop' in verdict) dropped.push({ index: s.index, type: s.type, codec: s.codec, reason: verdict.drop });
    else kept.push({ ...verdict, ...locatedOf(s) });
  }
  return { container, kept, dropped };
}

/** The audio plan of the kept track ffmpeg lists first (what a result reports as its audio). */
export function firstAudio(map: StreamMap): AudioPlan {
  const audio = map.kept.find((s) => s.type === 'audio');
  return audio?.type === 'audio' ? audio.plan : { mode: 'none' };
}

/**
 * The encoder's maps and codecs for the kept streams of input `input` (the original file), after
 * the upscaled picture (output video 0). Stream tags and dispositions follow each mapped stream,
 * less their location tags.
 */
export function streamMapArgs(
  map: StreamMap,
  input: number,
  coverFiles: ReadonlyMap<number, string> = new Map(),
): string[] {
  const args: string[] = [];
  const attached: { file: string; filename: string; mimetype: string }[] = [];
  const counts = { a: 0, s: 0, v: 1, t: 0 };
  // MP4 keeps a track's name in its handler (ffmpeg's `handler_name`), not in a `title` tag;
  // Matroska keeps the `title` tag itself, copied with the stream's other tags.
  const name = (specifier: string, title: string | undefined): string[] =>
    title === undefined || map.container !== 'mp4' ? [] : [`-metadata:s:${specifier}`, `handler_name=${title}`];
  for (const s of map.kept) {
    if (s.type === 'timecode') {
      args.push('-metadata:s:v:0', `timecode=${s.start}`);
      continue;
    }
    if (s.type === 'cover' && s.attachment !== undefined) {
      const file = coverFiles.get(s.index);
      if (file === undefined) throw new Error(`Expected the extracted file of cover stream ${s.index}`);
      attached.push({ file, ...s.attachment });
      continue;
    }
    const kind = s.type === 'audio' ? 'a' : s.type === 'subtitle' ? 's' : s.type === 'cover' ? 'v' : 't';
    const specifier = `${kind}:${counts[kind]}`;
    args.push('-map', `${input}:${s.index}`);
    switch (s.type) {
      case 'audio':
        args.push(
          `-c:${specifier}`,
          ...(s.plan.mode === 'copy' ? ['copy'] : ['aac', `-b:${specifier}`, String(s.plan.bitrate)]),
          ...name(specifier, s.title),
        );
        break;
      case 'subtitle':
        args.push(
          `-c:${specifier}`,
          s.mode === 'copy' ? 'copy' : map.container === 'mp4' ? 'mov_text' : 'srt',
          ...name(specifier, s.title),
        );
        break;
      case 'cover':
        args.push(`-c:${specifier}`, 'copy', `-disposition:${specifier}`, 'attached_pic');
        break;
      case 'attachment':
        args.push(`-c:${specifier}`, 'copy');
        break;
    }
    for (const tag of s.locationTags ?? []) args.push(`-metadata:s:${specifier}`, `${tag}=`);
    counts[kind] += 1;
  }
  // Files attached with -attach come after every mapped stream, attachments included.
  for (const cover of attached) {
    const specifier = `-metadata:s:t:${counts.t}`;
    args.push(
      '-attach',
      fileInput(cover.file),
      specifier,
      `mimetype=${cover.mimetype}`,
      specifier,
      `filename=${cover.filename}`,
    );
    counts.t += 1;
  }
  return args;
}

/** The covers the pipeline must take out of the source before encoding (Matroska's, which are attached as files). */
export function coversToExtract(map: StreamMap): number[] {
  return map.kept.flatMap((s) => (s.type === 'cover' && s.attachment !== undefined ? [s.index] : []));
}

/** ffmpeg's arguments that write cover stream `index` of the source, its one packet as it is, to `outputPath`. */
export function coverExtractArgs(
  source: { path: string; container: ContainerKind },
  index: number,
  outputPath: string,
): string[] {
  return [
    ...quietFfmpegArgs(),
    ...safeFileInputArgs(source.path, source.container),
    '-map',
    `0:${index}`,
    '-c',
    'copy',
    '-frames:v',
    '1',
    '-f',
    'image2',
    fileInput(outputPath),
  ];
}

/** Tag names that hold where a clip was made (QuickTime's ISO 6709 location, Android's, GPS fields). */
export function isLocationTag(name: string): boolean {
  return /location|gps|iso6709|xyz/i.test(name);
}

/**
 * Whether the tags hold QuickTime metadata keys (reverse-DNS names: a phone's
 * `com.apple.quicktime.make`, `.model`, `.creationdate`, `.software`). MP4's default, iTunes-style
 * tags have no place for them, so an MP4 result keeps them only as QuickTime keys (`mp4Movflags`).
 */
export function hasQuickTimeKeys(tags: Readonly<Record<string, string>>): boolean {
  return Object.keys(tags).some((name) => name.includes('.') && !isLocationTag(name));
}

/** The MP4 muxer's flags: the index first, and the file's tags as QuickTime keys where the source has such keys. */
export function mp4Movflags(tags: Readonly<Record<string, string>>): string {
  return hasQuickTimeKeys(tags) ? '+faststart+use_metadata_tags' : '+faststart';
}

/** The source's file type, which ffmpeg lists among its tags: written as keys, they would describe the wrong file. */
const FILE_TYPE_TAGS = ['major_brand', 'minor_version', 'compatible_brands'];

/**
 * Global metadata from input `input`, every location tag removed (an empty value deletes it); with
 * QuickTime keys, which are written as they are, the source's file-type tags removed too.
 */
export function globalTagArgs(tags: Readonly<Record<string, string>>, input: number): string[] {
  const args = ['-map_metadata', String(input)];
  const keys = hasQuickTimeKeys(tags);
  for (const name of Object.keys(tags)) {
    if (isLocationTag(name) || (keys && FILE_TYPE_TAGS.includes(name))) args.push('-metadata', `${name}=`);
  }
  return args;
}

/** Global metadata (location removed) and chapters from input `input`. */
export function metadataArgs(tags: Readonly<Record<string, string>>, input: number): string[] {
  return [...globalTagArgs(tags, input), '-map_chapters', String(input)];
}
