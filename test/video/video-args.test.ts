/**
 * The pure decisions of the video pipeline: sizes, rates, audio, encoder options, ffmpeg argument
 * lists, the extra probe's parsing and the error wording.
 */
import { describe, expect, it } from 'vitest';
import { JobError, ProcessingError } from '../../src/errors.js';
import { ProcessError, ffmpegReason } from '../../src/media/index.js';
import {
  DEFAULT_ENCODER,
  MP4_COPY_AUDIO_CODECS,
  audioPlan,
  colourPlan,
  decoderArgs,
  fineTimescale,
  sourceStream,
  streamMap,
  encoderArgs,
  encoderFilters,
  inputMatrix,
  videoCodecArgs,
  FfmpegFailure,
  ffmpegFailure,
  displayedSize,
  expectedFrameCount,
  frameTiming,
  rgbFrameBytes,
  videoGeometry,
  parseAspect,
  parseVideoExtras,
  type VideoExtras,
} from '../../src/video/index.js';
import { upscaleFailure } from '../../src/kinds/video-upscale/pipeline/index.js';
import { pipelineFailure } from '../../src/jobs/index.js';

const square: VideoExtras = {
  sampleAspect: { num: 1, den: 1 },
  videoStartOffset: 0,
  videoIndex: 0,
  bitDepth: 8,
  streams: [],
  tags: {},
};

/** The value following `flag` in an argument list. */
function after(args: string[], flag: string, from = 0): string | undefined {
  const i = args.indexOf(flag, from);
  return i === -1 ? undefined : args[i + 1];
}

describe('videoGeometry', () => {
  it.each([
    // coded w, h, rotation, factor -> decoded, network, output (exactly decoded x factor, odd sides too)
    [96, 64, 0, '2', [96, 64], [192, 128], [192, 128]],
    [96, 64, 0, '4', [96, 64], [384, 256], [384, 256]],
    [96, 64, 0, '1', [96, 64], [192, 128], [96, 64]],
    [64, 48, 90, '2', [48, 64], [96, 128], [96, 128]],
    [64, 48, 270, '4', [48, 64], [192, 256], [192, 256]],
    [64, 48, 180, '2', [64, 48], [128, 96], [128, 96]],
    [63, 47, 0, '1', [63, 47], [126, 94], [63, 47]],
    [63, 48, 0, '1', [63, 48], [126, 96], [63, 48]],
    [47, 63, 90, '1', [63, 47], [126, 94], [63, 47]],
    [63, 47, 0, '2', [63, 47], [126, 94], [126, 94]],
    [1920, 1080, 0, '4', [1920, 1080], [7680, 4320], [7680, 4320]],
  ] as const)('%ix%i rotated %i at factor %s', (width, height, rotation, factor, decoded, network, output) => {
    const g = videoGeometry({ width, height, rotation }, Number(factor), factor === '4' ? 4 : 2);
    expect([g.decoded.width, g.decoded.height]).toEqual(decoded);
    expect([g.network.width, g.network.height]).toEqual(network);
    expect([g.output.width, g.output.height]).toEqual(output);
    expect([g.target.width, g.target.height]).toEqual([decoded[0] * Number(factor), decoded[1] * Number(factor)]);
    expect(g.scale).toBe(factor === '4' ? 4 : 2);
  });

  it('refuses sizes that are not positive integers', () => {
    expect(() => videoGeometry({ width: 0, height: 48, rotation: 0 }, 2, 2)).toThrow(
      'Expected the video width to be a positive integer but received 0',
    );
    expect(() => videoGeometry({ width: 64, height: 47.5, rotation: 0 }, 2, 2)).toThrow(
      'Expected the video height to be a positive integer but received 47.5',
    );
  });

  it('swaps only for quarter turns; a frame is width x height x 3 bytes', () => {
    expect(displayedSize({ width: 4, height: 3, rotation: 90 })).toEqual({ width: 3, height: 4 });
    expect(displayedSize({ width: 4, height: 3, rotation: 180 })).toEqual({ width: 4, height: 3 });
    expect(rgbFrameBytes({ width: 4, height: 3 })).toBe(36);
    expect(rgbFrameBytes({ width: 4, height: 3 }, 16)).toBe(72);
  });
});

describe('frame timing', () => {
  it('passes constant-rate frames through and makes variable-rate input constant at its highest rate', () => {
    expect(frameTiming({ fps: { num: 30000, den: 1001 }, variableFrameRate: false })).toEqual({
      mode: 'passthrough',
      rate: { num: 30000, den: 1001 },
    });
    expect(frameTiming({ fps: { num: 10, den: 1 }, variableFrameRate: true })).toEqual({
      mode: 'cfr',
      rate: { num: 10, den: 1 },
    });
    expect(frameTiming({ fps: { num: 20, den: 1 }, variableFrameRate: true, cfrRate: { num: 30, den: 1 } })).toEqual({
      mode: 'cfr',
      rate: { num: 30, den: 1 },
    });
    expect(
      frameTiming({ fps: { num: 20, den: 1 }, variableFrameRate: false, cfrRate: { num: 30, den: 1 } }).rate,
    ).toEqual({ num: 20, den: 1 });
    expect(() => frameTiming({ fps: { num: 0, den: 1 }, variableFrameRate: false })).toThrow(
      'Expected a positive frame rate fraction but received 0/1',
    );
  });

  it.each([
    ['the container count when passing through', { frameCount: 12 }, 0.48, 'passthrough', 12],
    ['duration x rate without a count', {}, 0.48, 'passthrough', 12],
    ['duration x rate when resampling', { frameCount: 7 }, 2, 'cfr', 20],
    ['at least one', {}, 0.001, 'cfr', 1],
  ] as const)('expects %s', (_, video, seconds, mode, frames) => {
    expect(expectedFrameCount(video, seconds, { mode, rate: { num: mode === 'cfr' ? 10 : 25, den: 1 } })).toBe(frames);
  });
});

describe('audioPlan', () => {
  it.each([
    ['aac', 2, { mode: 'copy', codec: 'aac' }],
    ['mp3', 2, { mode: 'copy', codec: 'mp3' }],
    ['ac3', 6, { mode: 'copy', codec: 'ac3' }],
    ['eac3', 6, { mode: 'copy', codec: 'eac3' }],
    ['alac', 2, { mode: 'copy', codec: 'alac' }],
    ['opus', 2, { mode: 'aac', bitrate: 192_000, from: 'opus' }],
    ['opus', 1, { mode: 'aac', bitrate: 96_000, from: 'opus' }],
    ['flac', 2, { mode: 'aac', bitrate: 192_000, from: 'flac' }],
    ['vorbis', 2, { mode: 'aac', bitrate: 192_000, from: 'vorbis' }],
    ['pcm_s16le', 2, { mode: 'aac', bitrate: 192_000, from: 'pcm_s16le' }],
    ['opus', 6, { mode: 'aac', bitrate: 448_000, from: 'opus' }],
  ] as const)('%s with %i channels', (codec, channels, plan) => {
    expect(audioPlan({ codec, channels })).toEqual(plan);
  });

  it('has nothing to carry without an audio stream; copies only codecs MP4 players agree on', () => {
    expect(audioPlan(undefined)).toEqual({ mode: 'none' });
    expect([...MP4_COPY_AUDIO_CODECS].sort()).toEqual(['aac', 'ac3', 'alac', 'eac3', 'mp3']);
  });
});

describe('videoCodecArgs', () => {
  it.each([
    [{ codec: 'libx264', crf: 18, preset: 'fast' }, ['-c:v', 'libx264', '-preset', 'fast', '-crf', '18']],
    [
      { codec: 'libx264', crf: 23, preset: 'veryslow', threads: 4 },
      ['-c:v', 'libx264', '-preset', 'veryslow', '-crf', '23', '-threads', '4'],
    ],
    [
      { codec: 'h264_nvenc', crf: 18, preset: 'fast' },
      ['-c:v', 'h264_nvenc', '-preset', 'p4', '-rc', 'vbr', '-cq', '18', '-b:v', '0'],
    ],
    [
      { codec: 'h264_nvenc', crf: 0, preset: 'ultrafast' },
      ['-c:v', 'h264_nvenc', '-preset', 'p1', '-rc', 'vbr', '-cq', '1', '-b:v', '0'],
    ],
    [
      { codec: 'h264_qsv', crf: 20, preset: 'slower' },
      ['-c:v', 'h264_qsv', '-preset', 'slower', '-global_quality', '20'],
    ],
  ] as const)('%j', (settings, args) => {
    expect(videoCodecArgs(settings)).toEqual(args);
  });

  it('words bad settings like every other validation message', () => {
    expect(() => videoCodecArgs({ ...DEFAULT_ENCODER, crf: 52 })).toThrow(
      'Expected the encoder crf to be an integer from 0 to 51 but received 52',
    );
    expect(() => videoCodecArgs({ ...DEFAULT_ENCODER, preset: 'placebo' as never })).toThrow(
      'Expected the encoder preset to be one of ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow but received "placebo"',
    );
  });

  it('defaults to libx264 CRF 18 preset veryfast', () => {
    expect(DEFAULT_ENCODER).toEqual({ codec: 'libx264', crf: 18, preset: 'veryfast' });
  });
});

describe('inputMatrix', () => {
  it.each([
    [{ matrix: 'bt2020' as const }, 640, 480, 'bt2020'],
    [{ matrix: 'smpte170m' as const }, 1920, 1080, 'smpte170m'],
    [{}, 1280, 720, 'bt709'],
    [{}, 720, 1280, 'bt709'],
    [{}, 640, 480, 'bt601'],
  ])('%j at %ix%i reads as %s', (extras, width, height, matrix) => {
    expect(inputMatrix(extras, { width, height })).toBe(matrix);
  });
});

describe('decoderArgs', () => {
  const geometry = videoGeometry({ width: 64, height: 48, rotation: 90 }, 2, 2);

  it('reads only the local file with its sniffed demuxer and writes raw RGB frames of the upright size', () => {
    const args = decoderArgs({
      inputPath: '/in/clip.mkv',
      container: 'mkv',
      geometry,
      timing: frameTiming({ fps: { num: 25, den: 1 }, variableFrameRate: false }),
      matrix: 'bt601',
    });
    expect(after(args, '-protocol_whitelist')).toBe('file,pipe');
    expect(after(args, '-format_whitelist')).toBe('matroska');
    expect(after(args, '-f')).toBe('matroska');
    expect(after(args, '-i')).toBe('file:/in/clip.mkv');
    expect(args.indexOf('-protocol_whitelist')).toBeLessThan(args.indexOf('-i'));
    expect(args).toContain('-xerror');
    expect(after(args, '-map')).toBe('0:V:0');
    expect(after(args, '-vf')).toBe(
      'scale=w=48:h=64:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=bt601,format=rgb24',
    );
    expect(after(args, '-fps_mode')).toBe('passthrough');
    expect(args.slice(-5)).toEqual(['-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1']);
  });

  it('deinterlaces interlaced input first, one frame per frame', () => {
    const args = decoderArgs({
      inputPath: '/in/tv.mkv',
      container: 'mkv',
      geometry,
      timing: { mode: 'passthrough', rate: { num: 25, den: 1 } },
      matrix: 'bt601',
      interlaced: true,
    });
    expect(after(args, '-vf')).toMatch(/^bwdif=mode=send_frame:parity=auto:deint=all,scale=w=48:h=64:/);
  });

  it('reads the chosen video stream', () => {
    const args = decoderArgs({
      inputPath: '/in/two.mkv',
      container: 'mkv',
      geometry,
      timing: { mode: 'passthrough', rate: { num: 25, den: 1 } },
      matrix: 'bt601',
      videoIndex: 1,
    });
    expect(after(args, '-map')).toBe('0:V:1');
  });

  it('makes variable frame rate constant with the fps filter (each time shows the frame on screen then)', () => {
    const args = decoderArgs({
      inputPath: '/in/vfr.mp4',
      container: 'mp4',
      geometry,
      timing: { mode: 'cfr', rate: { num: 10, den: 1 } },
      matrix: 'bt709',
    });
    expect(after(args, '-format_whitelist')).toBe('mov');
    expect(after(args, '-vf')).toMatch(/^fps=10\/1,scale=/);
    expect(after(args, '-fps_mode')).toBe('passthrough');
    expect(args).not.toContain('-r');
  });

  it('writes 16-bit RGB for a 16-bit plan, read with the BT.2020 matrix; tone-maps with zscale for hdr "sdr"', () => {
    const hdr10 = { bitDepth: 10, matrix: 'bt2020' as const, primaries: 'bt2020', transfer: 'smpte2084' };
    const keep = decoderArgs({
      inputPath: '/in/hdr.mp4',
      container: 'mp4',
      geometry,
      timing: { mode: 'passthrough', rate: { num: 25, den: 1 } },
      matrix: 'bt2020',
      colour: colourPlan(hdr10, 'keep', geometry.decoded),
    });
    expect(after(keep, '-vf')).toBe(
      'scale=w=48:h=64:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=bt2020,format=rgb48le',
    );
    expect(keep.slice(-5)).toEqual(['-f', 'rawvideo', '-pix_fmt', 'rgb48le', 'pipe:1']);
    const sdr = decoderArgs({
      inputPath: '/in/hdr.mp4',
      container: 'mp4',
      geometry,
      timing: { mode: 'passthrough', rate: { num: 25, den: 1 } },
      matrix: 'bt2020',
      colour: colourPlan(hdr10, 'sdr', geometry.decoded),
      colourSource: hdr10,
    });
    expect(after(sdr, '-vf')).toBe(
      'zscale=w=48:h=64:f=bicubic:tin=smpte2084:min=2020_ncl:pin=2020:rin=limited:t=linear:npl=100,format=gbrpf32le,zscale=p=709,' +
        'tonemap=tonemap=hable:desat=0,zscale=t=709:m=709:r=full,format=gbrp,format=rgb24',
    );
    expect(sdr.slice(-5)).toEqual(['-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1']);
  });

  it('refuses a relative path', () => {
    expect(() =>
      decoderArgs({
        inputPath: 'clip.mp4',
        container: 'mp4',
        geometry,
        timing: { mode: 'passthrough', rate: { num: 25, den: 1 } },
        matrix: 'bt709',
      }),
    ).toThrow('Expected an absolute path for the media input but received "clip.mp4"');
  });
});

describe('encoderArgs', () => {
  const base = {
    geometry: videoGeometry({ width: 96, height: 64, rotation: 0 }, 2, 2),
    timing: { mode: 'passthrough' as const, rate: { num: 30000, den: 1001 } },
    encoder: DEFAULT_ENCODER,
    extras: square,
    colour: colourPlan({ bitDepth: 8 }, 'keep', { width: 96, height: 64 }),
    source: { path: '/in/clip.mov', container: 'mov' as const },
    streams: { container: 'mp4' as const, kept: [], dropped: [] },
    outputPath: '/out/.video.mp4.1234.partial',
  };
  const withStreams = (streams: Parameters<typeof sourceStream>[0][]) => {
    const all = streams.map((s, i) => sourceStream(s, i));
    return { extras: { ...square, streams: all }, streams: streamMap(all, 0) };
  };

  it('reads raw RGB at the network size and rate from the pipe, the original for its other streams, and writes an MP4 file', () => {
    const args = encoderArgs(base);
    const pipeAt = args.indexOf('pipe:0');
    expect(args.slice(args.indexOf('-protocol_whitelist'), pipeAt + 1)).toEqual([
      '-protocol_whitelist',
      'pipe',
      '-format_whitelist',
      'rawvideo',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      '-video_size',
      '192x128',
      '-framerate',
      '30000/1001',
      '-i',
      'pipe:0',
    ]);
    const second = args.lastIndexOf('-protocol_whitelist');
    expect(args.slice(second, second + 8)).toEqual([
      '-protocol_whitelist',
      'file,pipe',
      '-format_whitelist',
      'mov',
      '-f',
      'mov',
      '-i',
      'file:/in/clip.mov',
    ]);
    expect(args).not.toContain('-enc_time_base:v:0');
    expect(args.filter((a) => a === '-map')).toHaveLength(1);
    expect(after(args, '-map')).toBe('0:v:0');
    expect(after(args, '-map_metadata')).toBe('1');
    expect(after(args, '-map_chapters')).toBe('1');
    expect(after(args, '-c:v:0')).toBe('libx264');
    expect(after(args, '-pix_fmt:v:0')).toBe('yuv420p');
    expect(after(args, '-colorspace')).toBe('bt709');
    expect(after(args, '-fps_mode')).toBe('passthrough');
    expect(after(args, '-r')).toBe('30000/1001');
    expect(after(args, '-movflags')).toBe('+faststart');
    expect(args.slice(-3)).toEqual(['-f', 'mp4', 'file:/out/.video.mp4.1234.partial']);
  });

  it('keeps every audio track (copied, or AAC where MP4 cannot carry it), text subtitles as mov_text and cover art, by their file index', () => {
    const { extras, streams } = withStreams([
      { codec_type: 'video', codec_name: 'h264' },
      { codec_type: 'audio', codec_name: 'aac', channels: 2, tags: { language: 'eng', title: 'Main' } },
      { codec_type: 'audio', codec_name: 'opus', channels: 6 },
      { codec_type: 'subtitle', codec_name: 'subrip', tags: { language: 'fra' } },
      { codec_type: 'subtitle', codec_name: 'hdmv_pgs_subtitle' },
      { codec_type: 'video', codec_name: 'mjpeg', disposition: { attached_pic: 1 } },
      { codec_type: 'attachment', codec_name: 'ttf' },
    ]);
    const args = encoderArgs({ ...base, extras, streams });
    const maps = args.flatMap((a, i) => (a === '-map' ? [args[i + 1]] : []));
    expect(maps).toEqual(['0:v:0', '1:1', '1:2', '1:3', '1:5']);
    expect(after(args, '-c:a:0')).toBe('copy');
    expect(after(args, '-metadata:s:a:0')).toBe('handler_name=Main');
    expect(after(args, '-c:a:1')).toBe('aac');
    expect(after(args, '-b:a:1')).toBe('448000');
    expect(after(args, '-c:s:0')).toBe('mov_text');
    expect(after(args, '-c:v:1')).toBe('copy');
    expect(after(args, '-disposition:v:1')).toBe('attached_pic');
    expect(streams.dropped.map((d) => [d.index, d.codec])).toEqual([
      [4, 'hdmv_pgs_subtitle'],
      [6, 'ttf'],
    ]);
  });

  it('keeps global tags and chapters but removes every location tag', () => {
    const args = encoderArgs({
      ...base,
      extras: {
        ...square,
        tags: {
          title: 'Trip',
          'com.apple.quicktime.location.ISO6709': '+48.85+002.29/',
          location: 'x',
          'location-eng': 'x',
          creation_time: '2024',
        },
      },
    });
    const removed = args.flatMap((a, i) => (a === '-metadata' ? [args[i + 1]] : []));
    expect(removed).toEqual(['com.apple.quicktime.location.ISO6709=', 'location=', 'location-eng=']);
    // Only location keys among the reverse-DNS names: MP4's usual tags hold the rest.
    expect(after(args, '-movflags')).toBe('+faststart');
  });

  it("writes a phone's QuickTime keys (make, creation date) as keys in MP4, without the source's file type", () => {
    const tags = {
      'com.apple.quicktime.make': 'Apple',
      'com.apple.quicktime.creationdate': '2024-05-01T10:20:30+0200',
      major_brand: 'qt  ',
      minor_version: '0',
      compatible_brands: 'qt  ',
    };
    const args = encoderArgs({ ...base, extras: { ...square, tags } });
    expect(after(args, '-movflags')).toBe('+faststart+use_metadata_tags');
    expect(args.flatMap((a, i) => (a === '-metadata' ? [args[i + 1]] : []))).toEqual([
      'major_brand=',
      'minor_version=',
      'compatible_brands=',
    ]);
  });

  it('starts the video where it started relative to the audio, and tags the input primaries and transfer with a matching matrix', () => {
    const colour = colourPlan({ bitDepth: 8, primaries: 'bt709', transfer: 'bt709' }, 'keep', {
      width: 96,
      height: 64,
    });
    const args = encoderArgs({ ...base, colour, extras: { ...square, videoStartOffset: 0.042 } });
    // Exactly 42 ms later, in a 90 kHz time base that 30000/1001 divides (the pipe's 1/rate would round it to a frame).
    expect(after(args, '-filter:v:0')).toMatch(/^settb=1\/90000,setpts=PTS\+3780,/);
    expect(after(args, '-enc_time_base:v:0')).toBe('1/90000');
    expect(after(args, '-video_track_timescale')).toBe('90000');
    expect([
      fineTimescale({ num: 2997, den: 125 }),
      fineTimescale({ num: 25, den: 1 }),
      fineTimescale({ num: 120000, den: 1001 }),
    ]).toEqual([89_910, 90_000, 120_000]);
    expect(args).not.toContain('-itsoffset');
    expect(after(args, '-color_primaries')).toBe('bt709');
    expect(after(args, '-color_trc')).toBe('bt709');
    const wide = encoderArgs({
      ...base,
      colour: colourPlan({ bitDepth: 8, primaries: 'bt2020', transfer: 'bt709' }, 'keep', { width: 96, height: 64 }),
    });
    expect([after(wide, '-colorspace'), after(wide, '-color_primaries')]).toEqual(['bt2020nc', 'bt2020']);
  });

  it('encodes a 16-bit plan as HEVC Main10 with hvc1, its colour and HDR10 metadata in the bitstream too', () => {
    const colour = colourPlan(
      {
        bitDepth: 10,
        matrix: 'bt2020',
        primaries: 'bt2020',
        transfer: 'smpte2084',
        mastering: {
          red: [34000, 16000],
          green: [13250, 34500],
          blue: [7500, 3000],
          whitePoint: [15635, 16450],
          maxLuminance: 10000000,
          minLuminance: 1,
        },
        contentLight: { maxCll: 1000, maxFall: 400 },
      },
      'keep',
      { width: 96, height: 64 },
    );
    const args = encoderArgs({ ...base, colour });
    expect(after(args, '-pix_fmt')).toBe('rgb48le');
    expect(after(args, '-c:v:0')).toBe('libx265');
    expect(after(args, '-crf')).toBe('23');
    expect(after(args, '-tag:v:0')).toBe('hvc1');
    expect(after(args, '-x265-params')).toBe(
      'log-level=error:colormatrix=bt2020nc:range=limited:colorprim=bt2020:transfer=smpte2084:' +
        'master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400:hdr10=1',
    );
    expect(after(args, '-pix_fmt:v:0')).toBe('yuv420p10le');
    expect([after(args, '-colorspace'), after(args, '-color_primaries'), after(args, '-color_trc')]).toEqual([
      'bt2020nc',
      'bt2020',
      'smpte2084',
    ]);
    expect(after(args, '-filter:v:0')).toBe(
      'scale=out_color_matrix=bt2020:out_range=tv:flags=bicubic+accurate_rnd,format=yuv420p10le,setsar=1/1',
    );
  });

  it.each([
    [
      'factor 2',
      videoGeometry({ width: 96, height: 64, rotation: 0 }, 2, 2),
      square,
      'scale=out_color_matrix=bt709:out_range=tv:flags=bicubic+accurate_rnd,format=yuv420p,setsar=1/1',
    ],
    [
      'factor 1 on an even input: back to the input size',
      videoGeometry({ width: 96, height: 64, rotation: 0 }, 1, 2),
      square,
      'scale=w=96:h=64:flags=lanczos+accurate_rnd,scale=out_color_matrix=bt709:out_range=tv:flags=bicubic+accurate_rnd,format=yuv420p,setsar=1/1',
    ],
    [
      'factor 1 on an odd input: exactly its size, 4:4:4',
      videoGeometry({ width: 63, height: 47, rotation: 0 }, 1, 2),
      square,
      'scale=w=63:h=47:flags=lanczos+accurate_rnd,scale=out_color_matrix=bt709:out_range=tv:flags=bicubic+accurate_rnd,format=yuv444p,setsar=1/1',
    ],
    [
      'non-square pixels',
      videoGeometry({ width: 96, height: 64, rotation: 0 }, 2, 2),
      { ...square, sampleAspect: { num: 4, den: 3 } },
      'scale=out_color_matrix=bt709:out_range=tv:flags=bicubic+accurate_rnd,format=yuv420p,setsar=4/3',
    ],
  ])('filters for %s', (_, geometry, extras, filters) => {
    expect(encoderFilters(geometry, extras)).toBe(filters);
  });
});

describe('parseVideoExtras', () => {
  it('reads aspect, start offset and colour', () => {
    const extras = parseVideoExtras({
      streams: [
        { codec_type: 'audio', start_time: '0.000000' },
        {
          codec_type: 'video',
          sample_aspect_ratio: '8:6',
          start_time: '0.042000',
          color_space: 'bt470bg',
          color_primaries: 'bt709',
          color_transfer: 'unknown',
        },
      ],
      format: { start_time: '0.000000' },
    });
    expect(extras).toMatchObject({
      sampleAspect: { num: 4, den: 3 },
      videoStartOffset: 0.042,
      matrix: 'bt470',
      primaries: 'bt709',
      videoIndex: 0,
      audioIndex: 0,
      bitDepth: 8,
    });
    expect(extras.transfer).toBeUndefined();
  });

  it('picks the streams probeMedia describes: the default one, else the first; cover art is no video', () => {
    const extras = parseVideoExtras({
      streams: [
        { codec_type: 'video', disposition: { default: 0, attached_pic: 1 } },
        { codec_type: 'video', disposition: { default: 0, attached_pic: 0 }, sample_aspect_ratio: '1:1' },
        { codec_type: 'audio', disposition: { default: 0 } },
        { codec_type: 'video', disposition: { default: 1, attached_pic: 0 }, sample_aspect_ratio: '4:3' },
        { codec_type: 'audio', disposition: { default: 1 } },
      ],
    });
    expect(extras).toMatchObject({ videoIndex: 1, audioIndex: 1, sampleAspect: { num: 4, den: 3 } });
    expect(parseVideoExtras({ streams: [{ codec_type: 'video' }, { codec_type: 'video' }] })).toMatchObject({
      videoIndex: 0,
    });
    expect(parseVideoExtras({ streams: [{ codec_type: 'video' }] }).audioIndex).toBeUndefined();
  });

  it.each([
    ['tt', true],
    ['bb', true],
    ['tb', true],
    ['progressive', undefined],
    [undefined, undefined],
  ])('field order %s: interlaced %s', (field_order, interlaced) => {
    expect(parseVideoExtras({ streams: [{ codec_type: 'video', field_order }] }).interlaced).toBe(interlaced);
  });

  it('falls back to square pixels, no offset and no colour claims', () => {
    expect(parseVideoExtras({ streams: [{ codec_type: 'video', sample_aspect_ratio: '0:1' }], format: {} })).toEqual({
      sampleAspect: { num: 1, den: 1 },
      videoStartOffset: 0,
      videoIndex: 0,
      bitDepth: 8,
      streams: [{ index: 0, type: 'video', codec: 'unknown', coverArt: false, tags: {} }],
      tags: {},
    });
    // A video that starts before the file's start (never after it) has no offset.
    expect(
      parseVideoExtras({ streams: [{ codec_type: 'video', start_time: '-0.1' }], format: { start_time: '0' } })
        .videoStartOffset,
    ).toBe(0);
    expect(parseAspect('N/A')).toEqual({ num: 1, den: 1 });
  });

  it('reads bit depth, HDR10 side data, Dolby Vision configuration, every stream and the global tags', () => {
    const extras = parseVideoExtras({
      streams: [
        {
          index: 0,
          codec_type: 'video',
          codec_name: 'hevc',
          pix_fmt: 'yuv420p10le',
          color_transfer: 'arib-std-b67',
          side_data_list: [
            { side_data_type: 'DOVI configuration record', dv_profile: 8, dv_bl_signal_compatibility_id: 4 },
            { side_data_type: 'Content light level metadata', max_content: 800, max_average: 200 },
          ],
        },
        { index: 1, codec_type: 'audio', codec_name: 'aac', channels: 2, tags: { language: 'eng' } },
        { index: 2, codec_type: 'data', codec_name: 'bin_data', tags: { handler_name: 'Core Media Metadata' } },
      ],
      format: { tags: { title: 'Trip', 'com.apple.quicktime.location.ISO6709': '+48.85+002.29/' } },
    });
    expect(extras).toMatchObject({
      bitDepth: 10,
      transfer: 'arib-std-b67',
      dolbyVision: { profile: 8, compatibility: 4 },
      contentLight: { maxCll: 800, maxFall: 200 },
    });
    expect(extras.streams.map((s) => `${s.index}:${s.type}:${s.codec}`)).toEqual([
      '0:video:hevc',
      '1:audio:aac',
      '2:data:bin_data',
    ]);
    expect(extras.tags['title']).toBe('Trip');
  });

  it('is PROBE_FAILED without a video stream', () => {
    const error = (() => {
      try {
        parseVideoExtras({
          streams: [{ codec_type: 'audio' }, { codec_type: 'video', disposition: { attached_pic: 1 } }],
        });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(JobError);
    expect((error as JobError).code).toBe('PROBE_FAILED');
  });
});

describe('failure wording', () => {
  const paths = [
    ['/tmp/job-1/input.mp4', 'input'],
    ['/tmp/job-1/.out.mp4.ab12.partial', 'output'],
  ] as const;

  it("keeps ffmpeg's last lines, without addresses or this host's paths", () => {
    const tail = [
      'first line that is too old',
      '[h264 @ 0x55d2785140c0] Invalid NAL unit size (767 > 102).',
      '[mov,mp4,m4a,3gp,3g2,mj2 @ 0x55d278512b80] stream 0, offset 0x43d3: partial file',
      'file:/tmp/job-1/input.mp4: corrupt input packet in stream 0',
      '',
    ].join('\n');
    expect(ffmpegReason(tail, paths)).toBe(
      'Invalid NAL unit size (767 > 102).; stream 0, offset 0x43d3: partial file; input: corrupt input packet in stream 0',
    );
    expect(ffmpegReason('\n\n', paths)).toBe('no details');
  });

  const failure = (reason: 'exit' | 'spawn' | 'signal', stderrTail = '') =>
    new ProcessError('ffmpeg failed', {
      command: 'ffmpeg',
      args: [],
      reason,
      exitCode: reason === 'exit' ? 1 : null,
      signal: reason === 'signal' ? 'SIGKILL' : null,
      stderrTail,
    });

  it.each([
    ['decoder', 'exit', 'PROBE_FAILED', false, /^The video could not be decoded: output: No such file/],
    ['decoder', 'spawn', 'UPSCALE_FAILED', true, /^The video decoder could not be started/],
    ['decoder', 'signal', 'UPSCALE_FAILED', true, /^The video decoder stopped/],
    ['encoder', 'exit', 'UPSCALE_FAILED', false, /^The video encoder failed: output: No such file/],
    ['encoder', 'spawn', 'UPSCALE_FAILED', true, /^The video encoder could not be started/],
    ['encoder', 'signal', 'UPSCALE_FAILED', true, /^The video encoder stopped/],
  ] as const)('%s %s -> %s (retryable %s)', (side, reason, code, retryable, message) => {
    const failed = ffmpegFailure(
      side,
      failure(reason, '/tmp/job-1/.out.mp4.ab12.partial: No such file or directory\n'),
      paths,
    );
    // video/ says whose fault it is without a code; the upscale pipeline names the input's fault,
    // the contract's edge (pipelineFailure, app/run-job.ts) the kind's code for the rest.
    expect(failed).toBeInstanceOf(FfmpegFailure);
    expect(failed.inputFault).toBe(code === 'PROBE_FAILED');
    const error = pipelineFailure(upscaleFailure(failed), 'video');
    expect(error.code).toBe(code);
    expect(error.retryable).toBe(retryable);
    expect(error.message).toMatch(message);
  });

  it('keeps a JobError from inside the pipeline, maps a processing failure and wraps anything else', () => {
    const own = new JobError('INVALID_MODEL', 'Expected a super-resolution model');
    expect(pipelineFailure(upscaleFailure(own), 'video')).toBe(own);
    const oom = new ProcessingError('Out of memory even with one 32x32 tile per call', { retryable: true });
    expect(upscaleFailure(oom)).toBe(oom);
    expect(pipelineFailure(upscaleFailure(oom), 'video')).toMatchObject({
      code: 'UPSCALE_FAILED',
      retryable: true,
      message: oom.message,
    });
    expect(pipelineFailure(upscaleFailure(new Error('boom')), 'video')).toMatchObject({
      code: 'UPSCALE_FAILED',
      message: 'Video upscaling failed: boom',
    });
  });
});
