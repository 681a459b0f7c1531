/**
 * The result's container and what each stream becomes in it (src/video/result-container.ts,
 * stream-map.ts), and the encoder's arguments for them: Matroska keeps everything it has a track
 * for, untouched; MP4 converts or leaves out what it cannot carry; location tags go from every stream.
 */
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_ENCODER,
  MAX_MATROSKA_COVERS,
  colourPlan,
  coverExtractArgs,
  encoderArgs,
  sourceStream,
  streamMap,
  videoGeometry,
  videoResultFormat,
  type VideoExtras,
} from '../../src/video/index.js';
import type { ContainerKind } from '../../src/media/index.js';

const after = (args: string[], flag: string): string | undefined => {
  const i = args.indexOf(flag);
  return i === -1 ? undefined : args[i + 1];
};
const all = (args: string[], flag: string): string[] => args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));

/** A Matroska file with a bit of everything. */
const SOURCE = [
  { codec_type: 'video', codec_name: 'hevc' },
  {
    codec_type: 'audio',
    codec_name: 'opus',
    channels: 2,
    tags: { language: 'eng', title: 'Main', LOCATION: '+48.85+002.29/' },
  },
  { codec_type: 'audio', codec_name: 'pcm_s24le', channels: 6 },
  { codec_type: 'subtitle', codec_name: 'hdmv_pgs_subtitle', tags: { language: 'eng' } },
  { codec_type: 'subtitle', codec_name: 'dvb_subtitle' },
  { codec_type: 'subtitle', codec_name: 'ass' },
  { codec_type: 'data', codec_name: 'bin_data' },
  { codec_type: 'attachment', codec_name: 'ttf', tags: { filename: 'Font.ttf' } },
  { codec_type: 'video', codec_name: 'png', disposition: { attached_pic: 1 } },
].map((s, i) => sourceStream(s, i));

const extras: VideoExtras = {
  sampleAspect: { num: 1, den: 1 },
  videoStartOffset: 0,
  videoIndex: 0,
  bitDepth: 10,
  streams: SOURCE,
  tags: { title: 'Trip', location: 'x' },
};
const hdr = colourPlan({ bitDepth: 10, matrix: 'bt2020', primaries: 'bt2020', transfer: 'smpte2084' }, 'keep', {
  width: 96,
  height: 64,
});
const encode = (
  container: 'mp4' | 'mkv',
  coverFiles: ReadonlyMap<number, string> = new Map([[8, '/tmp/cover-8']]),
): string[] =>
  encoderArgs({
    coverFiles,
    geometry: videoGeometry({ width: 96, height: 64, rotation: 0 }, 2, 2),
    timing: { mode: 'passthrough', rate: { num: 24, den: 1 } },
    encoder: DEFAULT_ENCODER,
    extras,
    colour: hdr,
    source: { path: '/in/clip.mkv', container: 'mkv' },
    streams: streamMap(SOURCE, 0, container),
    outputPath: `/out/result.${container}`,
  });

describe('videoResultFormat', () => {
  it.each<[ContainerKind, string, string]>([
    ['mkv', 'mkv', 'video/x-matroska'],
    ['webm', 'mkv', 'video/x-matroska'],
    ['mp4', 'mp4', 'video/mp4'],
    ['mov', 'mp4', 'video/mp4'],
    ['m4v', 'mp4', 'video/mp4'],
  ])('%s in: %s out, served as %s', (input, ext, mediaType) => {
    expect(videoResultFormat(input)).toMatchObject({ ext, container: ext, mediaType });
  });
});

describe('streamMap into Matroska', () => {
  it('keeps every audio track, every subtitle (bitmap too), attachments and the cover, copied; leaves out data streams, saying why', () => {
    const map = streamMap(SOURCE, 0, 'mkv');
    expect(map.container).toBe('mkv');
    expect(map.kept.map((s) => [s.index, s.type, 'plan' in s ? s.plan.mode : 'mode' in s ? s.mode : '-'])).toEqual([
      [1, 'audio', 'copy'],
      [2, 'audio', 'copy'],
      [3, 'subtitle', 'copy'],
      [4, 'subtitle', 'copy'],
      [5, 'subtitle', 'copy'],
      [7, 'attachment', '-'],
      [8, 'cover', '-'],
    ]);
    expect(map.dropped.map((d) => [d.index, d.codec])).toEqual([[6, 'bin_data']]);
    expect(map.dropped.every((d) => d.reason.length > 10)).toBe(true);
  });

  it('writes Matroska: every stream copied, the cover attached from its file, no hvc1 tag, no MP4 options, each stream`s location removed, dispositions as they were', () => {
    expect(() => encode('mkv', new Map())).toThrow(/cover stream 8/);
    const args = encode('mkv');
    expect(all(args, '-map')).toEqual(['0:v:0', '1:1', '1:2', '1:3', '1:4', '1:5', '1:7']);
    // After the mapped attachment (t:0): the cover, by its codec's name and type.
    expect(all(args, '-attach')).toEqual(['file:/tmp/cover-8']);
    expect(all(args, '-metadata:s:t:1')).toEqual(['mimetype=image/png', 'filename=cover.png']);
    for (const flag of ['-c:a:0', '-c:a:1', '-c:s:0', '-c:s:1', '-c:s:2', '-c:t:0'])
      expect(after(args, flag), flag).toBe('copy');
    expect(args).not.toContain('-tag:v:0');
    expect(args).not.toContain('-movflags');
    expect(args).not.toContain('-video_track_timescale');
    // The title stays Matroska's own tag: no MP4 handler name.
    expect(all(args, '-metadata:s:a:0')).toEqual(['LOCATION=']);
    expect(all(args, '-metadata')).toEqual(['location=']);
    expect(after(args, '-disposition:v:0')).toBe('default');
    expect(after(args, '-default_mode')).toBe('passthrough');
    expect(args.slice(-3)).toEqual(['-f', 'matroska', 'file:/out/result.mkv']);
  });
});

describe('streamMap into MP4', () => {
  it('converts what MP4 cannot carry and leaves out the rest; removes location from each stream too', () => {
    const map = streamMap(SOURCE, 0, 'mp4');
    expect(map.kept.map((s) => [s.index, s.type])).toEqual([
      [1, 'audio'],
      [2, 'audio'],
      [5, 'subtitle'],
      [8, 'cover'],
    ]);
    expect(map.dropped.map((d) => d.codec)).toEqual(['hdmv_pgs_subtitle', 'dvb_subtitle', 'bin_data', 'ttf']);
    const args = encode('mp4');
    expect(after(args, '-c:a:0')).toBe('aac'); // Opus: MP4 players disagree on it
    expect(after(args, '-c:a:1')).toBe('aac');
    expect(after(args, '-c:s:0')).toBe('mov_text');
    expect(all(args, '-metadata:s:a:0')).toEqual(['handler_name=Main', 'LOCATION=']);
    expect(after(args, '-tag:v:0')).toBe('hvc1');
    expect(args.slice(-4)).toEqual(['+faststart', '-f', 'mp4', 'file:/out/result.mp4']);
  });
});

describe('timecode', () => {
  const withTimecode = (timecode: string) =>
    [
      { codec_type: 'video', codec_name: 'h264', tags: { timecode } },
      { codec_type: 'audio', codec_name: 'aac', channels: 2 },
      { codec_type: 'data', codec_name: 'unknown', tags: { timecode } },
      { codec_type: 'data', codec_name: 'unknown', tags: { handler_name: 'GoPro MET' } },
    ].map((s, i) => sourceStream(s, i));

  it.each(['mp4', 'mkv'] as const)(
    'into %s: the timecode track is written again from its start, not mapped; telemetry is left out',
    (container) => {
      const map = streamMap(withTimecode('01:02:03:04'), 0, container);
      expect(map.kept).toContainEqual({ type: 'timecode', index: 2, start: '01:02:03:04' });
      expect(map.dropped.map((d) => d.index)).toEqual([3]);
      const args = encoderArgs({
        geometry: videoGeometry({ width: 96, height: 64, rotation: 0 }, 2, 2),
        timing: { mode: 'passthrough', rate: { num: 25, den: 1 } },
        encoder: DEFAULT_ENCODER,
        extras: { ...extras, streams: withTimecode('01:02:03:04') },
        colour: colourPlan({ bitDepth: 8 }, 'keep', { width: 96, height: 64 }),
        source: { path: '/in/clip.mp4', container: 'mp4' },
        streams: map,
        outputPath: '/out/result',
      });
      expect(all(args, '-map')).toEqual(['0:v:0', '1:1']);
      expect(all(args, '-metadata:s:v:0')).toEqual(['timecode=01:02:03:04']);
    },
  );

  it('a timecode ffmpeg could not write is not passed on: the track is left out', () => {
    const map = streamMap(withTimecode('01:02:03:04 -f null'), 0, 'mp4');
    expect(map.kept.some((s) => s.type === 'timecode')).toBe(false);
    expect(map.dropped.map((d) => d.index)).toEqual([2, 3]);
  });
});

describe('coverExtractArgs', () => {
  it('copies the one packet of the cover stream, read with the sniffed demuxer only, to an image file', () => {
    const args = coverExtractArgs({ path: '/in/clip.mkv', container: 'mkv' }, 8, '/out/.x.partial.cover-8');
    expect(after(args, '-map')).toBe('0:8');
    expect(after(args, '-c')).toBe('copy');
    expect(after(args, '-format_whitelist')).toBe('matroska');
    expect(args.slice(-3)).toEqual(['-f', 'image2', 'file:/out/.x.partial.cover-8']);
  });
});

describe('Matroska covers', () => {
  it(`keeps at most ${MAX_MATROSKA_COVERS} (each is an ffmpeg run to take out), the rest listed as dropped`, () => {
    const many = [
      { codec_type: 'video', codec_name: 'h264' },
      ...Array.from({ length: 12 }, () => ({
        codec_type: 'video',
        codec_name: 'mjpeg',
        disposition: { attached_pic: 1 },
      })),
    ].map((s, i) => sourceStream(s, i));
    const map = streamMap(many, 0, 'mkv');
    expect(map.kept.filter((s) => s.type === 'cover')).toHaveLength(MAX_MATROSKA_COVERS);
    expect(map.dropped).toHaveLength(12 - MAX_MATROSKA_COVERS);
    expect(map.kept[0]).toMatchObject({ type: 'cover', attachment: { filename: 'cover.jpg', mimetype: 'image/jpeg' } });
  });
});
