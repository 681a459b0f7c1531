import { existsSync } from 'node:fs';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join, relative as relativePath } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveFfprobe } from '../../src/media/binaries.js';
import { normaliseRotation, parseFfprobeOutput, parseFraction, probeMedia } from '../../src/media/probe-media.js';
import { failure, ffmpeg, makeClip, makeTempDir, makeTone } from './helpers.js';

let dir: string;
let cleanup: () => Promise<void>;
const at = (name: string): string => join(dir, name);
const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('media'));
  await Promise.all([
    makeClip(at('15.04s.mp4'), { seconds: 15.04, size: '32x24', codec: x264 }),
    makeClip(at('av.mp4'), { seconds: 1, audio: true, codec: [...x264, '-c:a', 'aac'] }),
    makeClip(at('ntsc.mov'), { seconds: 1, rate: 30000 / 1001, codec: x264 }),
    makeClip(at('clip.m4v'), { seconds: 0.5, codec: x264 }),
    makeClip(at('opus.mkv'), { seconds: 1, audio: true, codec: [...x264, '-c:a', 'libopus'] }),
    makeClip(at('clip.webm'), {
      seconds: 1,
      audio: true,
      codec: ['-c:v', 'libvpx', '-b:v', '100k', '-c:a', 'libvorbis'],
    }),
    makeClip(at('anim.gif'), { seconds: 1.5, rate: 10, codec: [] }),
    makeClip(at('vfr.mp4'), {
      seconds: 2,
      codec: x264,
      extra: ['-vf', "select='lt(mod(n\\,10)\\,3)+eq(mod(n\\,10)\\,7)'", '-fps_mode', 'vfr'],
    }),
    ffmpeg([
      '-f',
      'lavfi',
      '-i',
      'color=black:size=64x48:rate=25',
      '-t',
      '0.2',
      '-vf',
      'drawbox=x=0:y=0:w=16:h=16:color=white:t=fill',
      ...x264,
      at('box.mp4'),
    ]),
    makeTone(at('tone.mp3')),
    makeTone(at('tone.wav')),
    makeTone(at('tone.aac'), ['-c:a', 'aac']),
    makeTone(at('tone.ogg'), ['-c:a', 'libvorbis']),
    makeTone(at('tone.m4a'), ['-c:a', 'aac']),
    makeTone(at('isom-audio.mp4'), ['-c:a', 'aac']),
    sharp({ create: { width: 16, height: 16, channels: 3, background: '#808080' } })
      .jpeg()
      .toFile(at('cover.jpg')),
  ]);
  await Promise.all([
    ffmpeg(['-i', at('box.mp4'), '-c', 'copy', '-metadata:s:v:0', 'rotate=90', at('rotated.mp4')]),
    ffmpeg([
      '-i',
      at('tone.mp3'),
      '-i',
      at('cover.jpg'),
      '-map',
      '0',
      '-map',
      '1',
      '-c',
      'copy',
      '-disposition:v',
      'attached_pic',
      '-id3v2_version',
      '3',
      at('cover.mp3'),
    ]),
  ]);
  const whole = await readFile(at('av.mp4'));
  // ffmpeg writes the moov box at the end: cutting the file in half loses it.
  await writeFile(at('truncated.mp4'), whole.subarray(0, Math.floor(whole.length / 2)));
  await writeFile(at('notes.mp4'), 'not a video\n');
  await writeFile(
    at('playlist.mp4'),
    `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1.0,\n${at('av.mp4')}\n#EXT-X-ENDLIST\n`,
  );
  await writeFile(at('concat.mp4'), `ffconcat version 1.0\nfile ${at('av.mp4')}\n`);
});

afterAll(async () => {
  await cleanup();
});

describe('probeMedia on video', () => {
  it('measures a 15.04 s MP4 so that it bills 16 s', async () => {
    const info = await probeMedia(at('15.04s.mp4'));
    expect(info.container).toBe('mp4');
    expect(info.durationSeconds).toBeCloseTo(15.04, 2);
    expect(Math.ceil(info.durationSeconds)).toBe(16);
    expect(info.video).toMatchObject({
      codec: 'h264',
      width: 32,
      height: 24,
      rotation: 0,
      fps: { num: 25, den: 1 },
      variableFrameRate: false,
    });
    expect(info.video?.frameCount).toBe(376);
    expect(info.audio).toBeUndefined();
  });

  it('reports video and audio streams of an MP4', async () => {
    const info = await probeMedia(at('av.mp4'));
    expect(info.video).toMatchObject({ width: 64, height: 48, pixelFormat: 'yuv420p' });
    expect(info.audio).toMatchObject({ codec: 'aac', sampleRate: 44100, channels: 1 });
    expect(info.audio?.seconds).toBeGreaterThan(0);
    expect(info.formatName).toBe('mov,mp4,m4a,3gp,3g2,mj2');
  });

  it('keeps 29.97 fps as an exact fraction', async () => {
    const info = await probeMedia(at('ntsc.mov'));
    expect(info.container).toBe('mov');
    expect(info.video?.fps).toEqual({ num: 30000, den: 1001 });
    expect(info.video?.variableFrameRate).toBe(false);
  });

  it.each([
    ['clip.m4v', 'm4v', 0.5, false],
    ['opus.mkv', 'mkv', 1, true],
    ['clip.webm', 'webm', 1, true],
    ['anim.gif', 'gif', 1.5, false],
  ])('reads %s as %s', async (name, container, seconds, hasAudio) => {
    const info = await probeMedia(at(name));
    expect(info.container).toBe(container);
    expect(info.durationSeconds).toBeCloseTo(seconds, 1);
    expect(info.video).toBeDefined();
    expect(info.audio !== undefined).toBe(hasAudio);
  });

  it('flags variable frame rate and finds its highest rate (frames 40 ms apart: 25 fps)', async () => {
    const info = await probeMedia(at('vfr.mp4'));
    expect(info.video?.variableFrameRate).toBe(true);
    expect(info.video?.cfrRate).toEqual({ num: 25, den: 1 });
  });

  it('reports rotation as the clockwise turn ffmpeg itself applies for display', async () => {
    const info = await probeMedia(at('rotated.mp4'));
    expect(info.video).toMatchObject({ width: 64, height: 48 });
    // Ask ffmpeg where the white top-left box ends up once it auto-rotates the picture.
    const raw = at('rotated.gray');
    await ffmpeg(['-i', at('rotated.mp4'), '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'gray', raw]);
    const pixels = await readFile(raw);
    const [w, h] = [48, 64];
    expect(pixels.length).toBe(w * h);
    const bright = (x: number, y: number): boolean => (pixels[y * w + x] ?? 0) > 128;
    const turned = bright(w - 3, 2) ? 90 : bright(w - 3, h - 3) ? 180 : bright(2, h - 3) ? 270 : 0;
    expect(turned).not.toBe(0);
    expect(info.video?.rotation).toBe(turned);
  });
});

describe('probeMedia on audio', () => {
  it.each([
    ['tone.mp3', 'mp3', 'mp3'],
    ['tone.wav', 'wav', 'pcm_s16le'],
    ['tone.aac', 'aac', 'aac'],
    ['tone.ogg', 'ogg', 'vorbis'],
    ['tone.m4a', 'm4a', 'aac'],
    ['isom-audio.mp4', 'm4a', 'aac'],
  ])('reads %s as %s', async (name, container, codec) => {
    const info = await probeMedia(at(name));
    expect(info.container).toBe(container);
    expect(info.video).toBeUndefined();
    expect(info.audio).toMatchObject({ codec, sampleRate: 44100, channels: 1 });
    expect(info.audio?.seconds).toBe(info.durationSeconds);
    // Encoders pad to whole frames: about one second, never less.
    expect(info.durationSeconds).toBeGreaterThanOrEqual(0.99);
    expect(info.durationSeconds).toBeLessThan(1.1);
  });

  it('does not mistake MP3 cover art for a video stream', async () => {
    const info = await probeMedia(at('cover.mp3'));
    expect(info.container).toBe('mp3');
    expect(info.video).toBeUndefined();
    expect(info.audio?.codec).toBe('mp3');
  });
});

describe('probeMedia refuses bad input', () => {
  it('refuses a truncated MP4 (moov missing) with the reason', async () => {
    const err = await failure(probeMedia(at('truncated.mp4')));
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toMatch(/^The MP4 file could not be read: moov atom not found/);
    expect(err.message).not.toContain(dir);
  });

  it('refuses a text file named .mp4', async () => {
    const err = await failure(probeMedia(at('notes.mp4')));
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toBe('Expected a video or audio file but received content in no supported format');
  });

  it('accepts a relative path', async () => {
    const relative = relativePath(process.cwd(), at('av.mp4'));
    expect((await probeMedia(relative)).container).toBe('mp4');
  });

  it('refuses an image', async () => {
    const err = await failure(probeMedia(at('cover.jpg')));
    expect(err.message).toBe('Expected a video or audio file but received a JPEG image');
  });

  it('refuses containers outside `accept` before running ffprobe', async () => {
    const err = await failure(probeMedia(at('clip.webm'), { accept: ['mp4', 'mov', 'mkv'] }));
    expect(err.code).toBe('PROBE_FAILED');
    expect(err.message).toBe('Expected one of MP4, MOV, MKV but received a WebM file');
  });

  describe('playlists and scripts never reach ffprobe', () => {
    let spy: string;
    const marker = (): string => at('ffprobe-ran');

    beforeAll(async () => {
      spy = at('spy-ffprobe.sh');
      await writeFile(spy, `#!/bin/sh\ntouch '${marker()}'\nexec '${resolveFfprobe()}' "$@"\n`);
      await chmod(spy, 0o755);
    });

    it.each(['playlist.mp4', 'concat.mp4'])('%s is refused before ffprobe runs', async (name) => {
      const err = await failure(probeMedia(at(name), { ffprobePath: spy }));
      expect(err.code).toBe('PROBE_FAILED');
      expect(existsSync(marker())).toBe(false);
    });

    it('control: the spy does see ordinary files', async () => {
      await probeMedia(at('av.mp4'), { ffprobePath: spy });
      expect(existsSync(marker())).toBe(true);
    });
  });

  it('rejects with the abort reason when cancelled', async () => {
    const controller = new AbortController();
    controller.abort(new Error('job cancelled'));
    await expect(probeMedia(at('av.mp4'), { signal: controller.signal })).rejects.toThrow('job cancelled');
  });
});

/** `count` packets of stream `index`, `step` seconds apart from `start`, each lasting `step`. */
function packets(
  index: number,
  count: number,
  step: number,
  start = 0,
): { stream_index: number; pts_time: string; duration_time: string; flags: string }[] {
  return Array.from({ length: count }, (_, i) => ({
    stream_index: index,
    pts_time: (start + i * step).toFixed(6),
    duration_time: step.toFixed(6),
    flags: 'K_',
  }));
}

describe('parseFfprobeOutput', () => {
  const video = {
    index: 0,
    codec_type: 'video',
    codec_name: 'h264',
    width: 640,
    height: 480,
    r_frame_rate: '25/1',
    avg_frame_rate: '25/1',
  };
  const oneSecond = packets(0, 25, 0.04);

  it('measures the duration from the packets, whatever the headers say: audio past the video counts, less its framing', () => {
    const info = parseFfprobeOutput(
      {
        format: { format_name: 'matroska,webm', duration: '1.0' },
        streams: [
          { ...video, duration: '4.5' },
          { index: 1, codec_type: 'audio', codec_name: 'opus', sample_rate: '48000', channels: 2, duration: '4.75' },
        ],
        packets: [...packets(0, 100, 0.04), ...packets(1, 250, 0.02)],
      },
      'mkv',
    );
    // 5 s of audio packets hold at least 5 s less a priming and a padded packet (2 x 20 ms) of content.
    expect(info.durationSeconds).toBeCloseTo(4.96, 9);
    expect(info.declaredDurationSeconds).toBe(1);
    expect(info.video).toMatchObject({ frameCount: 100, fps: { num: 25, den: 1 } });
    expect(info.video?.seconds).toBeCloseTo(4, 9);
    expect(info.audio?.seconds).toBeCloseTo(5, 9);
  });

  it.each([
    // ffmpeg's MKV: the AAC priming packet kept at 0, the video after it, the last packet a whole frame.
    ['mkv', 'AAC priming at 0, video from 23 ms', packets(1, 132, 0.023), 0.023, 3],
    // ffmpeg's WebM: Opus's pre-skip before 0, the last packet padded (its DiscardPadding not applied).
    ['mkv', 'Opus pre-skip before 0', packets(1, 151, 0.02, -0.007), 0.007, 3],
    // An MP4 whose mdhd was edited: the last AAC packet's trim (read from mdhd) gone.
    ['mp4', 'the last AAC packet untrimmed', packets(1, 130, 1024 / 44_100), 0, 3],
    // Audio that really runs on: 3 s of video, 3.2 s of AAC.
    ['mkv', 'audio 0.2 s past the video', packets(1, 140, 0.023), 0, 3.22 - 2 * 0.023],
  ] as const)(
    '%s, %s: the audio framing does not lengthen a 3 s video',
    (container, _what, audio, videoStart, seconds) => {
      const info = parseFfprobeOutput(
        {
          format: { format_name: 'matroska,webm', duration: '3.041' },
          streams: [video, { index: 1, codec_type: 'audio', codec_name: 'aac', sample_rate: '44100', channels: 1 }],
          packets: [...packets(0, 75, 0.04, videoStart), ...audio],
        },
        container,
      );
      expect(info.audio?.seconds).toBeGreaterThan(3);
      expect(info.durationSeconds).toBeCloseTo(seconds, 6);
    },
  );

  it('audio packets spaced seconds apart do not hide seconds past the video: the framing is at most 0.5 s', () => {
    const info = parseFfprobeOutput(
      {
        format: { format_name: 'matroska,webm', duration: '3' },
        streams: [video, { index: 1, codec_type: 'audio', codec_name: 'aac', sample_rate: '44100', channels: 1 }],
        packets: [...packets(0, 75, 0.04), ...packets(1, 3, 5)],
      },
      'mkv',
    );
    expect(info.durationSeconds).toBeCloseTo(15 - 0.5, 9);
  });

  it('an audio file is its whole span: there is no video to compare it with', () => {
    const audio = { index: 0, codec_type: 'audio', codec_name: 'aac', sample_rate: '44100', channels: 1 };
    const info = parseFfprobeOutput(
      { format: { format_name: 'mov', duration: '3' }, streams: [audio], packets: packets(0, 132, 0.023) },
      'm4a',
    );
    expect(info.durationSeconds).toBeCloseTo(3.036, 9);
  });

  it("reads a packet's typical length from the starts, not from durations a header gave every packet", () => {
    // A Matroska DefaultDuration edited to 10 s: every frame claims it; the starts are 40 ms apart.
    const claimed = packets(0, 25, 0.04).map((p) => ({ ...p, duration_time: '10' }));
    const info = parseFfprobeOutput(
      { format: { format_name: 'matroska,webm', duration: '1' }, streams: [video], packets: claimed },
      'mkv',
    );
    expect(info.durationSeconds).toBeCloseTo(0.96 + 4 * 0.04, 9);
  });

  it('takes the highest rate of a variable-frame-rate video from its shortest usual spacing, snapped to a common rate', () => {
    const vfr = { ...video, r_frame_rate: '30/1', avg_frame_rate: '20/1' };
    // 1 s at 30 fps (with a jitter of a millisecond), then 1 s at 15 fps.
    const times = [
      ...Array.from({ length: 30 }, (_, i) => i / 30 + (i % 2 === 0 ? 0.001 : 0)),
      ...Array.from({ length: 15 }, (_, i) => 1 + i / 15),
    ];
    const stamped = times.map((t) => ({ stream_index: 0, pts_time: t.toFixed(6), flags: 'K_' }));
    const info = parseFfprobeOutput(
      { format: { format_name: 'mov', duration: '2' }, streams: [vfr], packets: stamped },
      'mp4',
    );
    expect(info.video?.cfrRate).toEqual({ num: 30, den: 1 });
    // A constant rate has none; an uncommon highest rate is kept in thousandths.
    expect(
      parseFfprobeOutput({ format: { format_name: 'mov', duration: '1' }, streams: [video], packets: oneSecond }, 'mp4')
        .video?.cfrRate,
    ).toBeUndefined();
    const odd = packets(0, 20, 1 / 37).map((p) => ({ ...p, duration_time: undefined }));
    const slow = packets(0, 5, 0.2, 20 / 37);
    const info2 = parseFfprobeOutput(
      {
        format: { format_name: 'mov', duration: '2' },
        streams: [{ ...video, r_frame_rate: '37/1', avg_frame_rate: '10/1' }],
        packets: [...odd, ...slow],
      },
      'mp4',
    );
    expect(info2.video?.cfrRate).toEqual({ num: 37000, den: 1000 });
  });

  it('leaves packets marked to discard (before an edit list starts) uncounted', () => {
    const marked = packets(0, 30, 0.04).map((p, i) => (i < 5 ? { ...p, flags: 'KD' } : p));
    const info = parseFfprobeOutput(
      { format: { format_name: 'mov', duration: '1' }, streams: [video], packets: marked },
      'mp4',
    );
    expect(info.video?.frameCount).toBe(25);
    expect(info.durationSeconds).toBeCloseTo(1, 9);
  });

  it('does not believe one packet that claims to last for hours (an edited Ogg granule)', () => {
    const audio = { index: 0, codec_type: 'audio', codec_name: 'vorbis', sample_rate: '44100', channels: 1 };
    const lying = [
      ...packets(0, 99, 0.02),
      { stream_index: 0, pts_time: '1.98', duration_time: '97389.5', flags: 'K_' },
    ];
    const info = parseFfprobeOutput(
      { format: { format_name: 'ogg', duration: '97391' }, streams: [audio], packets: lying },
      'ogg',
    );
    expect(info.durationSeconds).toBeLessThan(2.1);
  });

  it('refuses a file whose streams hold no timed packets, whatever its headers say', () => {
    const audio = {
      index: 0,
      codec_type: 'audio',
      codec_name: 'mp3',
      sample_rate: '44100',
      channels: 1,
      duration: '3',
    };
    expect(() =>
      parseFfprobeOutput({ format: { format_name: 'mp3', duration: '3' }, streams: [audio] }, 'mp3'),
    ).toThrow('The duration of the MP3 file could not be measured: its streams hold no timed packets');
    expect(() =>
      parseFfprobeOutput({ format: { format_name: 'mov', duration: '3' }, streams: [video] }, 'mp4'),
    ).toThrow('The video stream holds no timed frames');
  });

  it('refuses a file without video or audio streams', () => {
    expect(() =>
      parseFfprobeOutput({ format: { format_name: 'mov', duration: '3' }, streams: [{ codec_type: 'data' }] }, 'mov'),
    ).toThrow('The MOV file contains no video or audio stream');
  });

  it.each([
    [{ side_data_list: [{ side_data_type: 'Display Matrix', rotation: -90 }] }, 90],
    [{ side_data_list: [{ side_data_type: 'Display Matrix', rotation: 90 }] }, 270],
    [{ side_data_list: [{ side_data_type: 'Display Matrix', rotation: 180 }] }, 180],
    [{ tags: { rotate: '90' } }, 90],
    [{ tags: { rotate: '-90' } }, 270],
    [{}, 0],
  ])('reads rotation from %o as %i degrees clockwise', (extra, rotation) => {
    const info = parseFfprobeOutput(
      { format: { format_name: 'mov', duration: '1' }, streams: [{ ...video, ...extra }], packets: oneSecond },
      'mp4',
    );
    expect(info.video?.rotation).toBe(rotation);
  });

  it('uses r_frame_rate when avg_frame_rate is unknown', () => {
    const info = parseFfprobeOutput(
      {
        format: { format_name: 'mov', duration: '1' },
        streams: [{ ...video, avg_frame_rate: '0/0', r_frame_rate: '24000/1001' }],
        packets: packets(0, 24, 1001 / 24000),
      },
      'mov',
    );
    expect(info.video?.fps).toEqual({ num: 24000, den: 1001 });
    expect(info.video?.variableFrameRate).toBe(false);
  });

  it.each([
    [0, 0],
    [90, 90],
    [-90, 270],
    [450, 90],
    [-180, 180],
    [89.6, 90],
    [Number.NaN, 0],
  ])('normaliseRotation(%d) = %d', (input, output) => {
    expect(normaliseRotation(input)).toBe(output);
  });

  it.each([
    ['30000/1001', { num: 30000, den: 1001 }],
    ['25/1', { num: 25, den: 1 }],
    ['0/0', undefined],
    ['25', undefined],
    [undefined, undefined],
  ])('parseFraction(%s)', (text, fraction) => {
    expect(parseFraction(text)).toEqual(fraction);
  });
});
