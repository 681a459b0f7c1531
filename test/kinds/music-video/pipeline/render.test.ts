/**
 * The music video with the real ffmpeg: a song of a tone then silence and a cover with a circle on
 * a 2:1 picture. The quote measures by decoding (lying headers, lying names, damage, length); the
 * render is checked with ffprobe (streams, size, 30 fps, length within one frame of the audio) and
 * by decoding its frames: the visualiser moves in the tone and lies flat in the silence, and the
 * circle stays round.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMediaDeps } from '../../../../src/media/index.js';
import {
  MUSIC_VIDEO_MODEL,
  layoutFor,
  musicVideoReadiness,
  parseMusicVideoInput,
  quoteMusicVideo,
  renderInputs,
  renderMusicVideo,
  type MusicVideoAspectRatio,
  type MusicVideoStyle,
  type QuotedMusicVideo,
} from '../../../../src/kinds/music-video/pipeline/index.js';
import { PACKAGE_ROOT } from '../../../../src/paths.js';
import { failure, ffmpeg, makeClip, makeTempDir } from '../../../media/helpers.js';

const run = promisify(execFile);
const FPS = 30;
let dir: string;
let cleanup: () => Promise<void>;
/** 2 s of a 440 Hz tone, then 2 s of silence. */
let song: string;
/** 800x400: a yellow circle of radius 150 on blue. */
let cover: string;

const file = (name: string): string => path.join(dir, name);

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('music-video'));
  song = file('song.mp3');
  await ffmpeg([
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=440:sample_rate=44100:duration=2',
    '-f',
    'lavfi',
    '-i',
    'anullsrc=r=44100:cl=mono:d=2',
    '-filter_complex',
    '[0:a]volume=4[t];[t][1:a]concat=n=2:v=0:a=1',
    '-c:a',
    'libmp3lame',
    '-b:a',
    '192k',
    song,
  ]);
  cover = file('cover.png');
  const inside = 'lt(hypot(X-400,Y-200),150)';
  await ffmpeg([
    '-f',
    'lavfi',
    '-i',
    'color=c=black:s=800x400',
    '-frames:v',
    '1',
    '-vf',
    `format=rgb24,geq=r='if(${inside},250,30)':g='if(${inside},200,80)':b='if(${inside},40,160)'`,
    cover,
  ]);
});

afterAll(async () => {
  await cleanup();
});

async function quote(
  audio: string,
  image = cover,
  extra: Record<string, unknown> = {},
  sub = 'q',
): Promise<QuotedMusicVideo> {
  const input = parseMusicVideoInput({ audio_url: audio, image_url: image, ...extra });
  await mkdir(path.join(dir, sub), { recursive: true });
  return quoteMusicVideo(
    { model: MUSIC_VIDEO_MODEL, input },
    createMediaDeps({ dir: path.join(dir, sub), allowLocalPaths: true }),
  );
}

interface Probed {
  streams: {
    codec_type: string;
    codec_name: string;
    pix_fmt?: string;
    width?: number;
    height?: number;
    r_frame_rate?: string;
    avg_frame_rate?: string;
    nb_frames?: string;
    duration?: string;
  }[];
  format: { duration: string };
}

async function probe(video: string): Promise<Probed> {
  const { stdout } = await run('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'stream=codec_type,codec_name,pix_fmt,width,height,r_frame_rate,avg_frame_rate,nb_frames,duration:format=duration',
    '-of',
    'json',
    video,
  ]);
  return JSON.parse(stdout) as Probed;
}

/** Every frame of a region, decoded as 8-bit luma. */
async function lumaFrames(
  video: string,
  box: { x: number; y: number; width: number; height: number },
): Promise<Buffer[]> {
  const { stdout } = await run(
    'ffmpeg',
    [
      '-v',
      'error',
      '-i',
      video,
      '-vf',
      `crop=${box.width}:${box.height}:${box.x}:${box.y},format=gray`,
      '-f',
      'rawvideo',
      'pipe:1',
    ],
    { encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 },
  );
  const size = box.width * box.height;
  return Array.from({ length: stdout.length / size }, (_, i) => stdout.subarray(i * size, (i + 1) * size));
}

/** Rows of a band holding pixels as bright as the visualiser's white (the baseline under it is drawn at 60 %). */
function inkRows(frame: Buffer, width: number): number {
  let rows = 0;
  for (let y = 0; y < frame.length / width; y++) {
    if (frame.subarray(y * width, (y + 1) * width).some((v) => v > 220)) rows += 1;
  }
  return rows;
}
const meanDifference = (a: Buffer, b: Buffer): number =>
  a.reduce((sum, v, i) => sum + Math.abs(v - b[i]!), 0) / a.length;

/** The bounding box of the pixels `match` picks in an RGB frame of the cover's box. */
async function boundingBox(
  video: string,
  at: number,
  box: { x: number; y: number; width: number; height: number },
  match: (r: number, g: number, b: number) => boolean,
): Promise<{ width: number; height: number }> {
  const { stdout } = await run(
    'ffmpeg',
    [
      '-v',
      'error',
      '-ss',
      String(at),
      '-i',
      video,
      '-frames:v',
      '1',
      '-vf',
      `crop=${box.width}:${box.height}:${box.x}:${box.y},format=rgb24`,
      '-f',
      'rawvideo',
      'pipe:1',
    ],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  let [minX, minY, maxX, maxY] = [Infinity, Infinity, -1, -1];
  for (let y = 0; y < box.height; y++) {
    for (let x = 0; x < box.width; x++) {
      const i = 3 * (y * box.width + x);
      if (!match(stdout[i]!, stdout[i + 1]!, stdout[i + 2]!)) continue;
      minX = Math.min(minX, x);
      maxX = Math.max(maxX, x);
      minY = Math.min(minY, y);
      maxY = Math.max(maxY, y);
    }
  }
  return { width: maxX - minX + 1, height: maxY - minY + 1 };
}

describe('the quote measures the audio by decoding it', () => {
  it('prices a 12.4-second song at 13 started seconds x 2 = 26 credits, and echoes what it measured', async () => {
    const wav = await makeWav('song-12.4.wav', 12.4);
    const quoted = await quote(wav, cover, { title: 'Twelve', style: 'still', aspect_ratio: '1:1' });
    expect(quoted.quote).toEqual({
      model: 'vendor-music-video',
      creditsUsed: 26,
      input: {
        audio_url: wav,
        image_url: cover,
        title: 'Twelve',
        style: 'still',
        aspect_ratio: '1:1',
        detected_duration: '12.4s',
        billed_seconds: 13,
        credits_per_second: 2,
      },
    });
    expect(quoted.probes.audio.container).toBe('wav');
    expect(quoted.probes.image.format).toBe('png');
  });

  it('bills what decodes, not what a WAV header claims (60 s claimed, 12.4 s there)', async () => {
    const wav = await makeWav('liar.wav', 12.4);
    const bytes = await readFile(wav);
    const claimed = 60 * 44_100 * 2;
    const data = bytes.indexOf('data', 12, 'latin1');
    bytes.writeUInt32LE(claimed, data + 4);
    bytes.writeUInt32LE(claimed + data, 4);
    await writeFile(file('liar.wav'), bytes);
    const quoted = await quote(file('liar.wav'));
    // The last packet, cut short, is dropped (as the render drops it): 12.4 s less a few samples.
    expect(quoted.quote.creditsUsed).toBe(26);
    expect(Math.abs(quoted.price.durationSeconds - 12.4)).toBeLessThan(0.05);
  });

  it('a name decides nothing: a WAV called .mp3 is measured as the WAV it is; text called .png or .mp3 is refused', async () => {
    await copyFile(await makeWav('real.wav', 3), file('renamed.mp3'));
    const quoted = await quote(file('renamed.mp3'));
    expect([quoted.probes.audio.container, quoted.quote.creditsUsed, quoted.quote.input.detected_duration]).toEqual([
      'wav',
      20,
      '3s',
    ]);

    await writeFile(file('text.png'), 'not a picture at all\n'.repeat(50));
    await writeFile(file('text.mp3'), 'not a song at all\n'.repeat(50));
    const image = await failure(quote(song, file('text.png')));
    expect([image.code, image.status]).toEqual(['PROBE_FAILED', 422]);
    expect(image.message).toContain('Expected a JPEG, PNG or WebP image');
    expect((await failure(quote(file('text.mp3')))).code).toBe('PROBE_FAILED');
    // A picture where the audio goes, and a video (MP4 with a picture) are not audio files.
    expect((await failure(quote(cover))).code).toBe('PROBE_FAILED');
    const clip = await makeClip(file('clip.mp4'), { seconds: 1, audio: true });
    const video = await failure(quote(clip));
    expect([video.code, video.message]).toEqual([
      'PROBE_FAILED',
      'Expected audio_url to be MP3, WAV, AAC, OGG, M4A or FLAC but received MP4 content',
    ]);
  });

  it('damaged audio fails at the quote with PROBE_FAILED: garbage in an MP3, an M4A cut before its index', async () => {
    const mp3 = await readFile(song);
    for (let i = Math.floor(mp3.length / 3); i < Math.floor(mp3.length / 3) + 3000; i++) mp3[i] = (i * 131) % 256;
    await writeFile(file('damaged.mp3'), mp3);
    const damaged = await failure(quote(file('damaged.mp3')));
    expect([damaged.code, damaged.status]).toEqual(['PROBE_FAILED', 422]);
    expect(damaged.message).toMatch(/^The audio could not be decoded: /);

    // The index at the end, the file cut in half: nothing says where the audio is.
    await ffmpeg(['-f', 'lavfi', '-i', 'sine=frequency=440:duration=6', '-c:a', 'aac', file('whole.m4a')]);
    const m4a = await readFile(file('whole.m4a'));
    await writeFile(file('cut.m4a'), m4a.subarray(0, Math.floor(m4a.length / 2)));
    const cut = await failure(quote(file('cut.m4a')));
    expect([cut.code, cut.message]).toEqual([
      'PROBE_FAILED',
      'The M4A file could not be read: moov atom not found; input: Invalid data found when processing input',
    ]);
  });

  it('a file cut short of what its index says is the audio that is there (the index in front, half the bytes)', async () => {
    await ffmpeg([
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:duration=24',
      '-c:a',
      'aac',
      '-movflags',
      '+faststart',
      file('front.m4a'),
    ]);
    const m4a = await readFile(file('front.m4a'));
    await writeFile(file('front-cut.m4a'), m4a.subarray(0, Math.floor(m4a.length / 2)));
    const quoted = await quote(file('front-cut.m4a'));
    expect(quoted.price.durationSeconds).toBeGreaterThan(10);
    expect(quoted.price.durationSeconds).toBeLessThan(14);
    expect(quoted.quote.creditsUsed).toBe(2 * quoted.price.billedSeconds);
  });

  it('refuses audio over 8 minutes with AUDIO_TOO_LONG before the cover is fetched', async () => {
    await ffmpeg(['-f', 'lavfi', '-i', 'anullsrc=r=8000:cl=mono', '-t', '481', '-c:a', 'pcm_u8', file('long.wav')]);
    const err = await failure(quote(file('long.wav'), file('no-such-cover.png')));
    expect([err.code, err.status]).toEqual(['AUDIO_TOO_LONG', 422]);
    expect(err.message).toBe(
      'Expected the audio duration to be at most 480 seconds (8 minutes) but received 481 seconds',
    );
  });

  it.each([
    ['flac', ['-c:a', 'flac']],
    ['ogg', ['-c:a', 'libvorbis']],
    ['m4a', ['-c:a', 'aac']],
    ['aac', ['-c:a', 'aac', '-f', 'adts']],
  ])('accepts %s audio, measured to the millisecond', async (ext, codec) => {
    await ffmpeg([
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=12.4',
      ...codec,
      file(`tone.${ext}`),
    ]);
    const quoted = await quote(file(`tone.${ext}`), cover, {}, `q-${ext}`);
    expect(quoted.probes.audio.container).toBe(ext);
    // ADTS keeps the encoder's priming samples (no edit list to drop them): they decode, so they count.
    expect(Math.abs(quoted.price.durationSeconds - 12.4)).toBeLessThan(0.05);
    expect(quoted.quote.creditsUsed).toBe(26);
  });
});

/** A WAV of a 440 Hz tone, 44.1 kHz 16-bit mono. */
async function makeWav(name: string, seconds: number): Promise<string> {
  await ffmpeg([
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=440:sample_rate=44100:duration=${seconds}`,
    '-c:a',
    'pcm_s16le',
    file(name),
  ]);
  return file(name);
}

describe('the render', () => {
  const cases: [MusicVideoStyle, MusicVideoAspectRatio, number, number][] = [
    ['waveform', '16:9', 1920, 1080],
    ['spectrum', '16:9', 1920, 1080],
    ['still', '16:9', 1920, 1080],
    ['waveform', '1:1', 1080, 1080],
    ['spectrum', '9:16', 1080, 1920],
  ];

  it.each(cases)(
    '%s at %s: H.264 yuv420p %sx%s at 30 fps and AAC, as long as the audio; moves in sound, flat in silence; cover round',
    async (style, aspect, width, height) => {
      const quoted = await quote(
        song,
        cover,
        { title: 'Tone, then silence', style, aspect_ratio: aspect },
        `r-${style}-${width}x${height}`,
      );
      const output = file(`${style}-${width}x${height}.mp4`);
      const reports: number[] = [];
      const rendered = await renderMusicVideo({
        ...renderInputs(quoted),
        workDir: path.join(dir, `r-${style}-${width}x${height}`),
        outputPath: output,
        onProgress: (p) => {
          expect([p.stage, p.unit, p.total]).toEqual(['rendering', 'frames', 120]);
          reports.push(p.done ?? -1);
        },
      });
      expect(quoted.price.durationSeconds).toBe(4);
      expect(rendered).toMatchObject({ width, height, frames: 120, seconds: 4 });
      expect(reports[0]).toBe(0);
      expect(reports.at(-1)).toBe(120);

      const { streams, format } = await probe(output);
      const video = streams.find((s) => s.codec_type === 'video')!;
      const audio = streams.find((s) => s.codec_type === 'audio')!;
      expect(streams).toHaveLength(2);
      expect(video).toMatchObject({
        codec_name: 'h264',
        pix_fmt: 'yuv420p',
        width,
        height,
        r_frame_rate: '30/1',
        avg_frame_rate: '30/1',
        nb_frames: '120',
      });
      expect(audio.codec_name).toBe('aac');
      for (const seconds of [video.duration, audio.duration, format.duration])
        expect(Math.abs(Number(seconds) - 4)).toBeLessThanOrEqual(1 / FPS);

      // The band, frame by frame: 0.3-1.7 s is tone, 2.4-3.7 s silence (margins for the analysis windows).
      const layout = layoutFor(aspect);
      const frames = await lumaFrames(output, layout.visualiser);
      expect(frames).toHaveLength(120);
      const tone = frames.slice(9, 51);
      const silence = frames.slice(72, 111);
      const rows = (f: Buffer): number => inkRows(f, layout.visualiser.width);
      // Flat in silence: nothing drawn, or one flat line (the spectrum's floor), and no frame changes.
      expect(Math.max(...silence.map(rows))).toBeLessThanOrEqual(2);
      const stillness = silence.slice(1).map((f, i) => meanDifference(f, silence[i]!));
      expect(Math.max(...stillness)).toBeLessThan(0.5);
      if (style === 'still') {
        expect(Math.max(...tone.map(rows))).toBe(0);
      } else {
        // Tall in sound: the wave or the tone's bar rises over many rows.
        expect(Math.min(...tone.map(rows))).toBeGreaterThan(20);
        // The sound's frames differ from the silent picture: the visualiser is drawn where the baseline lay.
        expect(Math.min(...tone.map((f) => meanDifference(f, silence[0]!)))).toBeGreaterThan(1);
      }
      if (style === 'waveform') {
        // A 440 Hz tone: each frame starts at another phase, so the drawn wave moves from frame to frame.
        const motion = tone.slice(1).map((f, i) => meanDifference(f, tone[i]!));
        expect(motion.filter((m) => m > 0.5).length).toBeGreaterThan(motion.length * 0.8);
      }

      // The cover is 2:1 with a round circle: scaled without stretching, both keep their shape.
      const circle = await boundingBox(output, 1, layout.cover, (r, g, b) => r > 200 && g > 150 && b < 110);
      expect(circle.width / circle.height).toBeGreaterThan(0.97);
      expect(circle.width / circle.height).toBeLessThan(1.03);
      const picture = await boundingBox(
        output,
        1,
        layout.cover,
        (r, g, b) => (b > 120 && r < 90) || (r > 200 && g > 150 && b < 110),
      );
      expect(picture.width).toBe(layout.cover.width);
      expect(picture.width / picture.height).toBeGreaterThan(1.97);
      expect(picture.width / picture.height).toBeLessThan(2.03);
    },
    180_000,
  );

  it('a generated song as it is: an MP3 with a 1024x1024 JPEG cover', async () => {
    await ffmpeg(['-f', 'lavfi', '-i', 'testsrc2=s=1024x1024', '-frames:v', '1', file('generated-cover.jpg')]);
    const quoted = await quote(song, file('generated-cover.jpg'), { title: 'Generated' }, 'gen');
    const output = file('generated.mp4');
    await renderMusicVideo({ ...renderInputs(quoted), workDir: path.join(dir, 'gen'), outputPath: output });
    const { streams } = await probe(output);
    expect(streams.map((s) => s.codec_name)).toEqual(['h264', 'aac']);
  }, 120_000);

  it('the bill is what runs: audio that grew after its quote is rendered only as long as quoted', async () => {
    const wav = await makeWav('grows.wav', 2);
    const quoted = await quote(wav, cover, { style: 'still' }, 'grows');
    await copyFile(await makeWav('longer.wav', 6), wav);
    const output = file('grows.mp4');
    await renderMusicVideo({ ...renderInputs(quoted), workDir: path.join(dir, 'grows'), outputPath: output });
    const { streams, format } = await probe(output);
    expect(streams.find((s) => s.codec_type === 'video')?.nb_frames).toBe('60');
    expect(Number(format.duration)).toBeLessThanOrEqual(2.1);
  }, 120_000);

  it('stops on its signal: the promise rejects with the reason and ffmpeg is gone', async () => {
    const quoted = await quote(await makeWav('ten.wav', 10), cover, {}, 'abort');
    const abort = new AbortController();
    const reason = new Error('stop now');
    const rendering = renderMusicVideo({
      ...renderInputs(quoted),
      workDir: path.join(dir, 'abort'),
      outputPath: file('aborted.mp4'),
      signal: abort.signal,
      onProgress: (p) => {
        if ((p.done ?? 0) > 0) abort.abort(reason);
      },
    });
    await expect(rendering).rejects.toBe(reason);
    const { stdout } = await run('ps', ['-eo', 'args']);
    expect(stdout).not.toContain(file('aborted.mp4'));
  }, 120_000);
});

describe('readiness', () => {
  it('this host has what the render needs, and names what another lacks', async () => {
    const here = await musicVideoReadiness();
    expect(here).toMatchObject({ ready: true, missing: [] });
    expect(here.fontFile).toMatch(/\.(ttf|otf|ttc)$/);
    const lacking = await musicVideoReadiness({ ffmpegPath: file('no-ffmpeg'), fontFile: file('no-font.ttf') });
    expect(lacking.ready).toBe(false);
    expect(lacking.missing).toHaveLength(2);
    expect(lacking.missing[0]).toMatch(/^ffmpeg \(/);
    expect(lacking.missing[1]).toBe(`the font file ${file('no-font.ttf')} (not readable)`);
  });

  it('an ffmpeg that lists every filter but cannot render (an option its filters lack) fails the trial render', async () => {
    const fake = file('listing-ffmpeg');
    await writeFile(
      fake,
      `#!/bin/sh\ncase "$2" in -filters|-encoders|-demuxers) exec ffmpeg "$@";; esac\necho "Option rate not found." >&2\nexit 1\n`,
      { mode: 0o755 },
    );
    const r = await musicVideoReadiness({ ffmpegPath: fake, tmpDir: dir });
    expect(r.ready).toBe(false);
    expect(r.missing).toEqual(['an ffmpeg that renders a music video (listing-ffmpeg exited with code 1)']);
    expect((await readdir(dir)).filter((name) => name.startsWith('music-video-readiness-'))).toEqual([]);
  });
});

describe('the music-video command', () => {
  const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
  const cli = (
    args: string[],
    env: NodeJS.ProcessEnv = {},
  ): Promise<{ code: number; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      execFile(
        process.execPath,
        [CLI, ...args],
        { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, timeout: 120_000 },
        (err, stdout, stderr) => {
          resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
        },
      );
    });

  it('--help says what it takes', async () => {
    const r = await cli(['music-video', '--help']);
    expect(r.code).toBe(0);
    for (const flag of ['--audio', '--image', '--title', '--style', '--aspect-ratio', '--output'])
      expect(r.stdout).toContain(flag);
  });

  it('renders with the price and progress on stderr, prints the task, and leaves no temp files', async () => {
    const tmp = path.join(dir, 'cli-tmp');
    await mkdir(tmp);
    const out = file('cli.mp4');
    const r = await cli(
      [
        'music-video',
        '--audio',
        song,
        '--image',
        cover,
        '--title',
        'From the CLI',
        '--style',
        'spectrum',
        '--aspect-ratio',
        '1:1',
        '-o',
        out,
      ],
      { MEDIA_WORKER_TMP_DIR: tmp },
    );
    expect(r.code).toBe(0);
    expect(r.stderr).toContain('4s of audio: 20 credits');
    expect(r.stderr).toMatch(/rendering .*120\/120 frames/);
    expect(JSON.parse(r.stdout)).toMatchObject({
      model: 'vendor-music-video',
      status: 'completed',
      creditsUsed: 20,
      result: { url: out, type: 'video', duration: 4, width: 1080, height: 1080 },
    });
    expect((await probe(out)).streams.map((s) => [s.codec_name, s.width])).toEqual([
      ['h264', 1080],
      ['aac', undefined],
    ]);
    expect(await readdir(tmp)).toEqual([]);
  }, 120_000);

  it('media-worker run takes a music video job as the daemon does: the same price, an MP4 named by the task', async () => {
    const tmp = path.join(dir, 'run-tmp');
    await mkdir(tmp);
    const outDir = path.join(dir, 'run-out');
    const job = {
      id: 'cli-mv-1',
      model: 'vendor-music-video',
      input: { audio_url: song, image_url: cover, aspect_ratio: '9:16', style: 'still' },
    };
    const r = await cli(['run', JSON.stringify(job), '-o', `${outDir}/`], { MEDIA_WORKER_TMP_DIR: tmp });
    expect(r.code).toBe(0);
    const task = JSON.parse(r.stdout);
    expect(task).toMatchObject({
      id: 'cli-mv-1',
      model: 'vendor-music-video',
      status: 'completed',
      creditsUsed: 20,
      result: { type: 'video', duration: 4, width: 1080, height: 1920 },
    });
    expect(task.result.url).toBe(path.join(outDir, 'cli-mv-1.mp4'));
    const streams = (await probe(task.result.url)).streams;
    expect(streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([
      ['h264', 1080, 1920],
      ['aac', undefined, undefined],
    ]);
    expect(await readdir(tmp)).toEqual([]);
  }, 120_000);

  it('answers a wrong style with INVALID_STYLE and exit status 2', async () => {
    const r = await cli(['music-video', '--audio', song, '--image', cover, '--style', 'bars']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: { code: 'INVALID_STYLE', status: 400 } });
  });
});
