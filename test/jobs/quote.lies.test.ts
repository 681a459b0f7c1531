/**
 * The bill is what runs: files whose headers lie about their length (edited bytes of ffmpeg-made
 * clips, each container and audio format) are quoted from their streams. The quote measures the
 * truth (a refusal, or the price of the real length) and says what the headers claimed.
 */
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { quoteOnly } from '../../src/app/index.js';
import { parseJob, type LipsyncQuote, type VideoQuote } from '../../src/jobs/index.js';
import { resolveFfprobe, runProcess } from '../../src/media/index.js';
import { ffmpeg, makeClip, makeTempDir, makeTone } from '../media/helpers.js';
import {
  matroskaHeadersSay,
  mp3XingFramesDivided,
  mp4HeadersSay,
  oggLastGranuleSays,
} from '../../bench/video/lying-headers.js';

let dir: string;
let cleanup: () => Promise<void>;
const config = loadConfig({});
const small = { size: '64x36', rate: 5, audio: true };
const clips: Record<string, string> = {};

/** A copy of `source` named `name`, its headers edited by `lie`. */
async function lying(source: string, name: string, lie: (file: string) => Promise<void>): Promise<string> {
  const file = path.join(dir, name);
  await copyFile(source, file);
  await lie(file);
  return file;
}

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('quote-lies'));
  const mkv90 = await makeClip(path.join(dir, 'ninety.mkv'), { ...small, seconds: 90 });
  const mkv12 = await makeClip(path.join(dir, 'twelve.mkv'), { ...small, seconds: 12 });
  const mp490 = await makeClip(path.join(dir, 'ninety.mp4'), { ...small, seconds: 90 });
  const mp412 = await makeClip(path.join(dir, 'twelve.mp4'), { ...small, seconds: 12 });
  const mov12 = await makeClip(path.join(dir, 'twelve.mov'), { ...small, seconds: 12 });
  const m4v12 = await makeClip(path.join(dir, 'twelve.m4v'), { ...small, seconds: 12 });
  const webm12 = await makeClip(path.join(dir, 'twelve.webm'), {
    ...small,
    seconds: 12,
    codec: ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8'],
  });
  clips['mkv90'] = await lying(mkv90, 'ninety-lie.mkv', (f) => matroskaHeadersSay(f, 1));
  clips['mkv12'] = await lying(mkv12, 'twelve-lie.mkv', (f) => matroskaHeadersSay(f, 1));
  clips['mp490'] = await lying(mp490, 'ninety-lie.mp4', (f) => mp4HeadersSay(f, 1));
  clips['mp412'] = await lying(mp412, 'twelve-lie.mp4', (f) => mp4HeadersSay(f, 1));
  clips['mov12'] = await lying(mov12, 'twelve-lie.mov', (f) => mp4HeadersSay(f, 1));
  clips['m4v12'] = await lying(m4v12, 'twelve-lie.m4v', (f) => mp4HeadersSay(f, 1));
  clips['webm12'] = await lying(webm12, 'twelve-lie.webm', (f) => matroskaHeadersSay(f, 1));
  clips['video2'] = await makeClip(path.join(dir, 'two.mp4'), { ...small, seconds: 2 });

  // bench/video/input-measure.ts's clip: 3 s, 160x90, 25 fps, H.264 + AAC; MP4 with the index in front, and MKV.
  const bench = {
    seconds: 3,
    size: '160x90',
    rate: 25,
    audio: true,
    codec: ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac'],
  };
  clips['bench.mp4'] = await makeClip(path.join(dir, 'bench.mp4'), { ...bench, extra: ['-movflags', '+faststart'] });
  clips['bench.mkv'] = await makeClip(path.join(dir, 'bench.mkv'), bench);
  clips['bench-lie.mp4'] = await lying(clips['bench.mp4'], 'bench-lie.mp4', (f) => mp4HeadersSay(f, 1));
  clips['bench-lie.mkv'] = await lying(clips['bench.mkv'], 'bench-lie.mkv', (f) => matroskaHeadersSay(f, 1));
  // Its first half: the index (in front) still lists all 75 frames, the bytes of fewer are there.
  const whole = await readFile(clips['bench.mp4']);
  clips['bench-half.mp4'] = path.join(dir, 'bench-half.mp4');
  await writeFile(clips['bench-half.mp4'], whole.subarray(0, Math.floor(whole.length / 2)));

  // Audio, 3 s each, lying in each format's own way.
  clips['mp3'] = await lying(await makeTone(path.join(dir, 'tone.mp3'), [], 3), 'tone-lie.mp3', (f) =>
    mp3XingFramesDivided(f, 3),
  );
  clips['ogg'] = await lying(
    await makeTone(path.join(dir, 'tone.ogg'), ['-c:a', 'libvorbis'], 3),
    'tone-lie.ogg',
    (f) => oggLastGranuleSays(f, 44_100),
  );
  clips['m4a'] = await lying(await makeTone(path.join(dir, 'tone.m4a'), ['-c:a', 'aac'], 3), 'tone-lie.m4a', (f) =>
    mp4HeadersSay(f, 1),
  );
  // WAV whose data chunk declares 3 s but holds 1.5 s (cut short); ADTS AAC, whose length ffprobe
  // estimates from the first frames' bitrate: 1 s of near-empty frames, then 2 s of dense ones.
  const wav = await readFile(await makeTone(path.join(dir, 'tone.wav'), [], 3));
  clips['wav'] = path.join(dir, 'short.wav');
  await writeFile(clips['wav'], wav.subarray(0, 44 + 1.5 * 44_100 * 2));
  const quiet = path.join(dir, 'quiet.aac');
  const dense = path.join(dir, 'dense.aac');
  await ffmpeg(['-f', 'lavfi', '-i', 'anullsrc=r=44100:cl=mono', '-t', '1', '-c:a', 'aac', '-b:a', '16k', quiet]);
  await ffmpeg(['-f', 'lavfi', '-i', 'anoisesrc=r=44100:a=0.5', '-t', '2', '-c:a', 'aac', '-b:a', '256k', dense]);
  clips['aac'] = path.join(dir, 'mixed.aac');
  await writeFile(clips['aac'], Buffer.concat([await readFile(quiet), await readFile(dense)]));
}, 60_000);
afterAll(async () => cleanup());

/** Video frames ffmpeg's decoder delivers from `file` (ffprobe -count_frames). */
async function decodedFrames(file: string): Promise<number> {
  const { stdout } = await runProcess(resolveFfprobe(), [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-count_frames',
    '-show_entries',
    'stream=nb_read_frames',
    '-of',
    'csv=p=0',
    file,
  ]);
  return Number.parseInt(stdout.toString('utf8'), 10);
}

const quote = (body: unknown) => quoteOnly(parseJob(body), config, { taskId: 'quote-lies', allowLocalPaths: true });
const upscale = (video_url: string) =>
  quote({ model: 'vendor-video-upscale', input: { video_url, upscale_factor: '2' } }) as Promise<VideoQuote>;
const lipsync = (video_url: string, audio_url: string) =>
  quote({ model: 'vendor-lipsync-2', input: { video_url, audio_url } }) as Promise<LipsyncQuote>;

describe('video headers that lie are not believed', () => {
  it.each(['mkv90', 'mp490'])(
    '%s: 90 s claimed as 1 s is refused VIDEO_TOO_LONG, as the honest file is',
    async (name) => {
      await expect(upscale(clips[name] as string)).rejects.toMatchObject({ code: 'VIDEO_TOO_LONG' });
    },
  );

  it.each(['mkv12', 'mp412', 'mov12'])(
    '%s: 12 s claimed as 1 s is billed 12 s, every frame counted, the claim shown',
    async (name) => {
      const q = await upscale(clips[name] as string);
      expect(q.input).toMatchObject({ detected_duration: '12s', billed_seconds: 12 });
      expect(q.creditsUsed).toBe(12 * 16);
      expect(q.estimated_frames).toBe(60);
      expect(q.measured.video).toMatchObject({
        from: 'streams',
        video: { frames: 60, frame_rate: '5/1' },
        declared_seconds: 1,
      });
    },
  );

  it.each(['m4v12', 'webm12'])('%s: a lip-sync video of 12 s claimed as 1 s is billed 12 s', async (name) => {
    const q = await lipsync(clips[name] as string, clips['mp3'] as string);
    expect(q).toMatchObject({ duration: 12, creditsUsed: 12 * 10, input: { billed_seconds: 12 } });
    expect(q.measured.video.declared_seconds).toBe(1);
  });
});

describe("the benchmark's 3 s clip is quoted 3 s, whatever its container or headers say", () => {
  // The edited MP4 loses the trim of its last AAC packet (ffmpeg reads that packet's length from mdhd),
  // and any MKV keeps AAC's priming packet: the audio spans 3.019 s and 3.041 s, 3 s of content.
  it.each(['bench.mp4', 'bench.mkv', 'bench-lie.mp4', 'bench-lie.mkv'])(
    '%s: 3 s, 75 frames, 48 credits',
    async (name) => {
      const q = await upscale(clips[name] as string);
      expect(q.input).toMatchObject({ detected_duration: '3s', billed_seconds: 3 });
      expect(q).toMatchObject({ creditsUsed: 48, estimated_frames: 75 });
      expect(q.measured.video.video).toMatchObject({ seconds: 3, frames: 75 });
      if (name.includes('lie')) expect(q.measured.video.declared_seconds).toBe(1);
    },
  );
});

describe('a truncated lip-sync video is quoted for what it holds', () => {
  it('the first half of a 3 s MP4 whose index lists 75 frames: the frames there, and their seconds', async () => {
    const q = await lipsync(clips['bench-half.mp4'] as string, clips['mp3'] as string);
    const frames = q.measured.video.video?.frames as number;
    const decoded = await decodedFrames(clips['bench-half.mp4'] as string);
    // The last frame's bytes may be cut short: listed, but not decoded.
    expect(frames).toBeGreaterThan(0);
    expect(frames).toBeLessThan(75);
    expect(decoded).toBeGreaterThanOrEqual(frames - 1);
    expect(decoded).toBeLessThanOrEqual(frames);
    expect(q.duration).toBeCloseTo(frames / 25, 1);
    expect(q.input.billed_seconds).toBe(Math.ceil(q.duration));
    expect(q.measured.video.declared_seconds).toBe(3);
  });
});

describe('audio headers that lie are not believed', () => {
  it.each([
    ['mp3', 'Xing frame count a third of the truth', 3, 1.1],
    ['ogg', 'last granule claiming 1 s', 3, 1],
    ['m4a', 'mvhd/tkhd/mdhd claiming 1 s', 3, 1],
    ['wav', 'data chunk claiming 3 s, 1.5 s there', 1.5, 3],
    ['aac', 'ADTS length estimated from the first frames', 3, 10],
  ])('%s (%s): the audio measured is the audio there', async (name, _lie, truth, claimedNear) => {
    const q = await lipsync(clips['video2'] as string, clips[name] as string);
    const audio = q.measured.audio?.audio?.seconds as number;
    expect(Math.abs(audio - truth)).toBeLessThan(0.1);
    const declared = q.measured.audio?.declared_seconds;
    if (name === 'wav') {
      // ffprobe reads a WAV's length from the bytes there, so its header and the streams agree.
      expect(declared).toBeUndefined();
    } else {
      expect(declared).toBeDefined();
      expect(Math.abs((declared as number) - truth)).toBeGreaterThan(Math.min(1, Math.abs(claimedNear - truth) / 2));
    }
  });
});
