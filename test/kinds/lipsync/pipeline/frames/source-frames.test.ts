import { describe, expect, it } from 'vitest';
import {
  planTimeline,
  SourceFrames,
  cacheCapacity,
  sourceDecoderArgs,
  type FrameStream,
  type SourceDecodeSpec,
  lipsyncEncoderArgs,
  lipsyncVideoFilters,
  qualityArgs,
  checkLipsyncInput,
  facePassLimit,
  envelopeThroughTimeline,
  detectionSize,
  letterboxSize,
  scaleBox,
  CONTEXT_ROWS,
  srBandStart,
  srFacesPerCall,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import { DEFAULT_ENCODER, colourPlan } from '../../../../../src/video/index.js';
import type { MediaInfo } from '../../../../../src/media/index.js';
import type { SyncMode } from '../../../../../src/jobs/index.js';

/** A fake decoder over n frames whose byte 0 is the frame index; counts what it decodes. */
function fakeVideo(n: number): { open: (start: number) => FrameStream; decoded: () => number; opened: number[] } {
  let decoded = 0;
  const opened: number[] = [];
  return {
    opened,
    decoded: () => decoded,
    open(start: number): FrameStream {
      opened.push(start);
      let next = start;
      return {
        async next() {
          if (next >= n) return null;
          decoded += 1;
          const frame = Buffer.alloc(4);
          frame.writeUInt32LE(next);
          next += 1;
          return frame;
        },
        async close() {},
      };
    },
  };
}

async function serve(
  n: number,
  schedule: number[],
  capacity: number,
): Promise<{ got: number[]; decoded: number; opened: number[]; frames: SourceFrames }> {
  const video = fakeVideo(n);
  const frames = new SourceFrames(video.open, schedule, capacity);
  const got: number[] = [];
  for (let p = 0; p < schedule.length; p += 1) got.push((await frames.frameAt(p)).readUInt32LE(0));
  await frames.close();
  return { got, decoded: video.decoded(), opened: video.opened, frames };
}

function scheduleOf(mode: SyncMode, videoFrames: number, audioSeconds: number): number[] {
  const plan = planTimeline({ mode, videoFrames, fps: { num: 25, den: 1 }, audioSeconds });
  return Array.from({ length: plan.outputFrames }, (_, i) => plan.sourceFrame(i));
}

describe('source frames in output order', () => {
  it.each([
    // mode, video frames, audio seconds, cache capacity, most frames decoded
    ['cut_off', 100, 2, 2, 50],
    ['silence', 40, 4, 2, 40],
    ['remap', 100, 2, 2, 100],
    ['remap', 20, 4, 2, 20],
    ['loop', 30, 4, 30, 30],
    ['loop', 30, 4, 2, 100],
    ['bounce', 30, 4, 30, 30],
  ] as const)(
    '%s over %i frames for %f s of audio with %i cached: right frames, at most %i decoded',
    async (mode, n, seconds, capacity, most) => {
      const schedule = scheduleOf(mode, n, seconds);
      const { got, decoded } = await serve(n, schedule, capacity);
      expect(got).toEqual(schedule);
      expect(decoded).toBeLessThanOrEqual(most);
    },
  );

  it('walks a bounce backwards in forward chunks of the cache size', async () => {
    const n = 60;
    const schedule = scheduleOf('bounce', n, (2 * (n - 1)) / 25);
    expect(schedule.slice(58, 62)).toEqual([58, 59, 58, 57]);
    const capacity = 10;
    const { got, decoded, opened, frames } = await serve(n, schedule, capacity);
    expect(got).toEqual(schedule);
    // One forward pass, then each backward chunk restarts at its lowest frame.
    expect(opened[0]).toBe(0);
    expect(opened.slice(1)).toEqual([...opened.slice(1)].sort((a, b) => b - a));
    expect(opened.length - 1).toBeLessThanOrEqual(Math.ceil((n - 1) / capacity) + 1);
    // Each restart decodes from its start to the chunk's top: far fewer than restarting at 0 every frame.
    expect(decoded).toBeLessThan(n + (n * n) / capacity);
    expect(decoded).toBeGreaterThan(n);
    expect(frames.stats.peakCached).toBeLessThanOrEqual(capacity);
  });

  it('keeps a frozen or repeated frame without decoding again', async () => {
    const { got, decoded, frames } = await serve(10, [0, 0, 1, 1, 1, 5, 9, 9, 9, 9], 1);
    expect(got).toEqual([0, 0, 1, 1, 1, 5, 9, 9, 9, 9]);
    expect(decoded).toBe(10);
    expect(frames.stats.hits).toBe(6);
  });

  it('refuses positions out of order and a video shorter than the schedule', async () => {
    const video = fakeVideo(3);
    const frames = new SourceFrames(video.open, [0, 1, 2, 3], 2);
    await expect(frames.frameAt(1)).rejects.toThrow('Expected output position 0 to be asked next but received 1');
    for (let p = 0; p < 3; p += 1) await frames.frameAt(p);
    await expect(frames.frameAt(3)).rejects.toThrow('Expected source frame 3 but the video ended after 3 frames');
    expect(() => new SourceFrames(video.open, [0], 0)).toThrow(
      'Expected the frame cache capacity to be an integer of at least 1 but received 0',
    );
  });

  it('sizes the cache from a byte budget', () => {
    expect(cacheCapacity(1280 * 720 * 3, 512 * 1024 * 1024)).toBe(194);
    expect(cacheCapacity(1920 * 1080 * 3, 512 * 1024 * 1024, 2, 50)).toBe(50);
    expect(cacheCapacity(1920 * 1080 * 3, 1024)).toBe(2);
  });
});

describe('ffmpeg arguments', () => {
  const spec: SourceDecodeSpec = {
    inputPath: '/media/in.gif',
    container: 'gif',
    timing: { mode: 'cfr', rate: { num: 25, den: 1 } },
    matrix: 'bt601',
    size: { width: 160, height: 120 },
  };

  it('decodes a range of frames by index, after resampling a variable rate, with the input whitelisted', () => {
    const args = sourceDecoderArgs(spec, { start: 12, end: 40 });
    expect(args.slice(args.indexOf('-vf'), args.indexOf('-vf') + 2)).toEqual([
      '-vf',
      'fps=25/1,trim=start_frame=12:end_frame=40,scale=w=160:h=120:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=bt601,format=rgb24',
    ]);
    expect(args).toEqual(
      expect.arrayContaining([
        '-protocol_whitelist',
        'file,pipe',
        '-format_whitelist',
        'gif',
        '-f',
        'gif',
        '-i',
        'file:/media/in.gif',
      ]),
    );
    expect(args.slice(-7)).toEqual(['-fps_mode', 'passthrough', '-f', 'rawvideo', '-pix_fmt', 'rgb24', 'pipe:1']);
    const plain = sourceDecoderArgs({
      ...spec,
      timing: { mode: 'passthrough', rate: { num: 30, den: 1 } },
      interlaced: true,
    });
    expect(plain[plain.indexOf('-vf') + 1]).toMatch(/^bwdif=mode=send_frame:parity=auto:deint=all,scale=/);
    expect(() => sourceDecoderArgs(spec, { start: 5, end: 5 })).toThrow(
      'Expected the end frame to be an integer of at least 6 but received 5',
    );
  });

  it('encodes odd sides exactly (4:4:4), the audio fitted to the duration, and each quality mode', () => {
    expect(lipsyncVideoFilters({ width: 161, height: 121 }, { mode: 'crf', encoder: DEFAULT_ENCODER })).toBe(
      'scale=out_color_matrix=bt709:out_range=tv:flags=bicubic+accurate_rnd,format=yuv444p,setsar=1/1',
    );
    expect(lipsyncVideoFilters({ width: 160, height: 120 }, { mode: 'crf', encoder: DEFAULT_ENCODER })).toBe(
      'scale=out_color_matrix=bt709:out_range=tv:flags=bicubic+accurate_rnd,format=yuv420p,setsar=1/1',
    );
    expect(lipsyncVideoFilters({ width: 161, height: 121 }, { mode: 'lossless' }, { num: 4, den: 3 })).toBe(
      'setsar=4/3',
    );
    const encoder = { ...DEFAULT_ENCODER, preset: 'fast' } as const;
    expect(qualityArgs({ mode: 'bitrate', encoder, bitsPerSecond: 400_000 })).toEqual([
      '-c:v',
      'libx264',
      '-preset',
      'fast',
      '-b:v',
      '400000',
      '-minrate',
      '400000',
      '-maxrate',
      '400000',
      '-bufsize',
      '400000',
      '-x264-params',
      'nal-hrd=cbr',
    ]);
    expect(qualityArgs({ mode: 'crf', encoder })).toEqual(['-c:v', 'libx264', '-preset', 'fast', '-crf', '18']);
    const args = lipsyncEncoderArgs({
      size: { width: 160, height: 120 },
      rate: { num: 30000, den: 1001 },
      quality: { mode: 'crf', encoder: DEFAULT_ENCODER },
      audio: { path: '/media/a.mp3', container: 'mp3' },
      durationSeconds: 2.5,
      outputPath: '/out/.x.partial',
    });
    expect(args).toEqual(
      expect.arrayContaining([
        '-video_size',
        '160x120',
        '-framerate',
        '30000/1001',
        '-i',
        'pipe:0',
        '-f',
        'mp3',
        '-i',
        'file:/media/a.mp3',
      ]),
    );
    expect(args.slice(args.indexOf('-af'), args.indexOf('-af') + 2)).toEqual([
      '-af',
      'apad=whole_dur=2.500000,atrim=end=2.500000',
    ]);
    expect(args.slice(-3)).toEqual(['-f', 'mp4', 'file:/out/.x.partial']);
    expect(args[args.indexOf('-movflags') + 1]).toBe('+faststart');
  });

  it("keeps a phone source's QuickTime keys as keys, less its location and its file type", () => {
    const tags = {
      'com.apple.quicktime.make': 'Apple',
      'com.apple.quicktime.location.ISO6709': '+48.85+002.29/',
      major_brand: 'qt  ',
    };
    const args = lipsyncEncoderArgs({
      size: { width: 160, height: 120 },
      rate: { num: 30, den: 1 },
      quality: { mode: 'crf', encoder: DEFAULT_ENCODER },
      audio: { path: '/media/a.mp3', container: 'mp3' },
      metadataSource: { path: '/media/v.mov', container: 'mov', tags },
      durationSeconds: 2,
      outputPath: '/out/.x.partial',
    });
    expect(args[args.indexOf('-movflags') + 1]).toBe('+faststart+use_metadata_tags');
    expect(args.flatMap((a, i) => (a === '-metadata' ? [args[i + 1]] : []))).toEqual([
      'com.apple.quicktime.location.ISO6709=',
      'major_brand=',
    ]);
  });
});

describe('the 16-bit path (video/colour.ts colourPlan)', () => {
  const hlg = colourPlan({ bitDepth: 10, primaries: 'bt2020', transfer: 'arib-std-b67', matrix: 'bt2020' }, 'keep', {
    width: 160,
    height: 120,
  });
  const spec: SourceDecodeSpec = {
    inputPath: '/media/in.mp4',
    container: 'mp4',
    timing: { mode: 'passthrough', rate: { num: 25, den: 1 } },
    matrix: 'bt2020',
    colour: { plan: hlg, source: { primaries: 'bt2020', transfer: 'arib-std-b67' } },
    size: { width: 160, height: 120 },
  };

  it('decodes rgb48le frames with the input matrix, not tone-mapped', () => {
    expect(hlg.depth).toBe(16);
    const args = sourceDecoderArgs(spec);
    expect(args[args.indexOf('-vf') + 1]).toBe(
      'scale=w=160:h=120:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=bt2020,format=rgb48le',
    );
    expect(args.slice(-5)).toEqual(['-f', 'rawvideo', '-pix_fmt', 'rgb48le', 'pipe:1']);
  });

  it('encodes rgb48le to HEVC Main10 with the BT.2020 / HLG tags in the container and the bitstream, hvc1; the source bitrate as an x265 VBV cap', () => {
    const args = lipsyncEncoderArgs({
      size: { width: 160, height: 120 },
      rate: { num: 25, den: 1 },
      quality: { mode: 'crf', encoder: DEFAULT_ENCODER },
      colour: hlg,
      audio: { path: '/media/a.mp3', container: 'mp3' },
      durationSeconds: 2,
      outputPath: '/out/.x.partial',
    });
    expect(args.slice(args.indexOf('-pix_fmt'), args.indexOf('-pix_fmt') + 2)).toEqual(['-pix_fmt', 'rgb48le']);
    expect(args[args.indexOf('-vf') + 1]).toBe(
      'scale=out_color_matrix=bt2020:out_range=tv:flags=bicubic+accurate_rnd,format=yuv420p10le,setsar=1/1',
    );
    expect(args).toEqual(
      expect.arrayContaining([
        '-c:v',
        'libx265',
        '-tag:v',
        'hvc1',
        '-colorspace',
        'bt2020nc',
        '-color_primaries',
        'bt2020',
        '-color_trc',
        'arib-std-b67',
      ]),
    );
    expect(args[args.indexOf('-x265-params') + 1]).toBe(
      'log-level=error:colormatrix=bt2020nc:range=limited:colorprim=bt2020:transfer=arib-std-b67',
    );
    expect(args[args.lastIndexOf('-pix_fmt') + 1]).toBe('yuv420p10le');
    const cbr = qualityArgs({ mode: 'bitrate', encoder: DEFAULT_ENCODER, bitsPerSecond: 400_000 }, hlg);
    expect(cbr.slice(0, 6)).toEqual(['-c:v', 'libx265', '-preset', 'veryfast', '-b:v', '400000']);
    expect(cbr[cbr.indexOf('-x265-params') + 1]).toMatch(
      /^log-level=error:vbv-maxrate=400:vbv-bufsize=400:colormatrix=bt2020nc/,
    );
    expect(() => qualityArgs({ mode: 'lossless' }, hlg)).toThrow('Expected an 8-bit colour plan for a lossless result');
  });
});

describe('pipeline helpers', () => {
  const video: MediaInfo = {
    container: 'mp4',
    formatName: 'mov,mp4',
    durationSeconds: 12,
    video: { codec: 'h264', width: 160, height: 120, rotation: 0, fps: { num: 25, den: 1 }, variableFrameRate: false },
  };
  const audio: MediaInfo = {
    container: 'mp3',
    formatName: 'mp3',
    durationSeconds: 3,
    audio: { codec: 'mp3', sampleRate: 44_100, channels: 2 },
  };

  it.each([
    [
      'a video without a video stream',
      { videoInfo: { ...video, video: undefined } },
      'PROBE_FAILED',
      'Expected video_url to be a video with a video stream but received MP4 content without one',
    ],
    [
      'audio without an audio stream',
      { audioInfo: { ...audio, audio: undefined } },
      'PROBE_FAILED',
      'Expected audio_url to be audio with an audio stream but received MP3 content without one',
    ],
    ['a video over 30 s', { videoInfo: { ...video, durationSeconds: 30.5 } }, 'VIDEO_TOO_LONG', ''],
  ] as const)('refuses %s', (_what, change, code, words) => {
    const attempt = (): unknown =>
      checkLipsyncInput({ videoInfo: video, audioInfo: audio, model: 'vendor-lipsync-2', ...change } as Parameters<
        typeof checkLipsyncInput
      >[0]);
    expect(attempt).toThrow(expect.objectContaining({ code, message: expect.stringContaining(words) }));
  });

  it('limits the face pass to the frames the output can show', () => {
    expect(facePassLimit('cut_off', 70)).toBe(70);
    expect(facePassLimit('loop', 70)).toBe(70);
    expect(facePassLimit('bounce', 70)).toBe(70);
    expect(facePassLimit('silence', 70)).toBeUndefined();
    expect(facePassLimit('remap', 70)).toBeUndefined();
  });

  it("maps the job's audio onto source frames through the timeline (first showing)", () => {
    // 4 output frames at 4 fps over 2 source frames (remap): source 0 <- outputs 0, 1; source 1 <- 2, 3.
    const plan = planTimeline({ mode: 'remap', videoFrames: 2, fps: { num: 4, den: 1 }, audioSeconds: 1 });
    const samples = new Float32Array(16).map((_, i) => (i < 4 ? 0 : i < 8 ? 0.5 : i < 12 ? 1 : 0));
    expect([...envelopeThroughTimeline(samples, 16, plan, 3)]).toEqual([0, 1, Number.NaN]);
  });

  it('detects on frames of the letterbox size (at most 640 pixels for the active speaker) and maps boxes back', () => {
    expect(detectionSize({ width: 1920, height: 1080 })).toEqual({ width: 640, height: 360 });
    expect(detectionSize({ width: 320, height: 240 })).toEqual({ width: 320, height: 240 });
    // Without the active speaker: exactly the frame's part of BlazeFace's 256 letterbox.
    expect(letterboxSize({ width: 1280, height: 720 }, 256)).toEqual({ width: 256, height: 144 });
    expect(letterboxSize({ width: 1280, height: 720 }, 256, 0.25)).toEqual({ width: 171, height: 96 });
    expect(letterboxSize({ width: 160, height: 160 }, 256)).toEqual({ width: 160, height: 160 });
    const box = {
      x: 10,
      y: 20,
      width: 30,
      height: 40,
      score: 0.9,
      keypoints: {
        leftEye: [1, 2],
        rightEye: [3, 4],
        nose: [5, 6],
        mouth: [7, 8],
        leftEar: [9, 10],
        rightEar: [11, 12],
      },
    } as const;
    expect(scaleBox(box, 3, 2)).toEqual({
      x: 30,
      y: 40,
      width: 90,
      height: 80,
      score: 0.9,
      keypoints: {
        leftEye: [3, 4],
        rightEye: [9, 8],
        nose: [15, 12],
        mouth: [21, 16],
        leftEar: [27, 20],
        rightEar: [33, 24],
      },
    });
  });

  it('super-resolves only the band the mouth mask reaches, a tile batch of pixels per call', () => {
    expect(srBandStart(96, 0.5)).toBe(48 - CONTEXT_ROWS);
    expect(srFacesPerCall({ tile: 192, overlap: 10, batch: 1 }, 96 * 56)).toBe(6);
    expect(srFacesPerCall({ tile: 64, overlap: 10, batch: 1 }, 96 * 56)).toBe(1);
    expect(srFacesPerCall({ tile: 512, overlap: 10, batch: 8 }, 96 * 56)).toBe(16);
  });
});
