/**
 * Video fidelity end to end (docs/contract.md, "Video fidelity"): the corpus of bench/fidelity/fidelity-video-corpus.ts
 * (phone HDR10 and HLG, variable frame rate, a multi-track Matroska file, an odd size) through the
 * real upscale pipeline, real ffmpeg and the small x2 network; what comes out is checked with
 * ffprobe: codec, bit depth, colour tags, HDR metadata, streams, chapters, tags, frame times, sync
 * and exact sizes.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache, createSrModelLoader, parseSrModelChoices } from '../../../../src/inference/index.js';
import { probeMedia, resolveFfmpeg, type MediaInfo } from '../../../../src/media/index.js';
import { DEFAULT_WORK_LIMITS, parseJob, quoteJob } from '../../../../src/jobs/index.js';
import { HAND, NET } from '../../../jobs/hand-profile.js';
import {
  type VideoUpscaleOutcome,
  upscaleVideoFile,
} from '../../../../src/kinds/video-upscale/pipeline/video-pipeline.js';
import { type VideoCorpus, makeVideoCorpus } from '../../../../bench/fidelity/fidelity-video-corpus.js';
import { fileFacts, packetTimes, pictureOf, streamLabels } from '../../../../bench/fidelity/video-facts.js';
import { expectCorpusHdr10Metadata } from '../../../helpers/hdr10-metadata.js';
import { makeTempDir } from '../../../media/helpers.js';
import { decodeRgb, psnr } from './video-helpers.js';
import { type HdrMode, videoResultFormat } from '../../../../src/video/index.js';

const run = promisify(execFile);
const sessions = new SessionCache({ executionProviders: ['cpu'] });
const loadModel = createSrModelLoader({
  sessions,
  choices: parseSrModelChoices('video=esrgan-slim-x2,video:4=esrgan-slim-x4'),
});

let dir: string;
let cleanup: () => Promise<void>;
let corpus: VideoCorpus;
let runs = 0;

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('video-fidelity'));
  corpus = await makeVideoCorpus(dir);
}, 60_000);

afterAll(async () => {
  await sessions.release();
  await cleanup();
});

/** The 10-bit luma values of row `y` of the first frame. */
async function lumaRow(path: string, width: number, y: number): Promise<number[]> {
  const { stdout } = await run(
    resolveFfmpeg(),
    [
      '-v',
      'error',
      '-i',
      path,
      '-frames:v',
      '1',
      '-vf',
      `format=gray10le,crop=${width}:1:0:${y}`,
      '-f',
      'rawvideo',
      'pipe:1',
    ],
    { encoding: 'buffer' },
  );
  const values = new Uint16Array(stdout.buffer, stdout.byteOffset, stdout.byteLength / 2);
  return [...values];
}

async function upscale(
  input: string,
  factor: '1' | '2',
  hdr?: HdrMode,
  encoder?: { crf: number },
): Promise<{ info: MediaInfo; outcome: VideoUpscaleOutcome }> {
  const info = await probeMedia(input);
  runs += 1;
  const outcome = await upscaleVideoFile(
    {
      inputPath: input,
      outputPath: join(dir, `out-${runs}.${videoResultFormat(info.container).ext}`),
      factor,
      info,
      ...(hdr === undefined ? {} : { hdr }),
      ...(encoder === undefined ? {} : { encoder }),
    },
    loadModel,
  );
  return { info, outcome };
}

describe('HDR in, HDR out', () => {
  it('HDR10 (PQ, rotated 90°): upright HEVC Main10 with BT.2020 / PQ tags throughout, hvc1, and the mastering display and MaxCLL copied', async () => {
    const { outcome } = await upscale(corpus.hdr10, '2');
    const out = await fileFacts(outcome.outputPath);
    const video = pictureOf(out);
    expect(video).toMatchObject({
      codec_name: 'hevc',
      codec_tag_string: 'hvc1',
      pix_fmt: 'yuv420p10le',
      color_primaries: 'bt2020',
      color_space: 'bt2020nc',
      color_transfer: 'smpte2084',
      color_range: 'tv',
      width: 96,
      height: 128,
    });
    expect(video.profile).toBe('Main 10');
    expect(video.side_data_list ?? []).toEqual([]); // upright in the pixels, no rotation left
    await expectCorpusHdr10Metadata(outcome.outputPath);
    expect(outcome.colour).toEqual({ codec: 'hevc', bits: 10, transfer: 'smpte2084', toneMapped: false });
    expect([outcome.width, outcome.height]).toEqual([96, 128]);
    expect(streamLabels(out)).toEqual(['v:hevc(10)', 'a:aac']);
  });

  it('keeps more than 8 bits from decode to encode: a shallow 10-bit ramp stays smooth, without 8-bit steps', async () => {
    // Lossless encoding (CRF 0), so the encoder's own rounding of a shallow ramp does not hide what the pipeline kept.
    const { outcome } = await upscale(corpus.ramp10, '2', undefined, { crf: 0 });
    // The longest run of one value along a row: 8 input pixels per level in 10 bits, 32 where 8 bits step.
    const longestRun = (row: number[]): number => {
      let longest = 0;
      let run = 0;
      row.forEach((v, i) => {
        run = i > 0 && v === row[i - 1] ? run + 1 : 1;
        longest = Math.max(longest, run);
      });
      return longest;
    };
    const input = await lumaRow(corpus.ramp10, 320, 8);
    const output = await lumaRow(outcome.outputPath, 640, 16);
    expect(longestRun(input)).toBeLessThanOrEqual(12);
    // At x2, an 8-bit step would be a run of about 64 output pixels; 10 bits keep it near 16.
    expect(longestRun(output)).toBeLessThan(36);
    expect(new Set(output).size).toBeGreaterThan(30);
  });

  it("HLG: HEVC Main10 tagged BT.2020 / HLG, the same matrix as the primaries; the phone's QuickTime keys kept, its location not", async () => {
    const { outcome } = await upscale(corpus.hlg, '2');
    const out = await fileFacts(outcome.outputPath);
    const video = pictureOf(out);
    expect(video).toMatchObject({
      codec_name: 'hevc',
      pix_fmt: 'yuv420p10le',
      color_primaries: 'bt2020',
      color_space: 'bt2020nc',
      color_transfer: 'arib-std-b67',
    });
    expect(out.tags).toMatchObject({
      'com.apple.quicktime.make': 'Apple',
      'com.apple.quicktime.creationdate': '2024-05-01T10:20:30+0200',
    });
    expect(Object.keys(out.tags).filter((k) => /location/i.test(k))).toEqual([]);
    // The MP4's own file type, not the source's written again as a key.
    expect(out.tags['major_brand']).toBe('isom');
  });

  it('hdr "sdr": tone-mapped to 8-bit H.264 tagged BT.709 throughout, and darker than a naive read of the PQ code values', async () => {
    const { outcome } = await upscale(corpus.hlg, '2', 'sdr');
    const video = pictureOf(await fileFacts(outcome.outputPath));
    expect(video).toMatchObject({
      codec_name: 'h264',
      pix_fmt: 'yuv420p',
      color_primaries: 'bt709',
      color_space: 'bt709',
      color_transfer: 'bt709',
    });
    expect(outcome.colour).toEqual({ codec: 'h264', bits: 8, transfer: 'bt709', toneMapped: true });
  });
});

describe('time as it was', () => {
  it('variable frame rate: constant at its highest rate (30 fps), every input frame shown at its time, none dropped, sound in sync, billed as processed', async () => {
    const { info, outcome } = await upscale(corpus.vfr, '2');
    expect(info.video?.cfrRate).toEqual({ num: 30, den: 1 });
    // The quote's frame count (what the estimate and the job's pixel limit bill) is the frames processed.
    const quoted = await quoteJob(
      parseJob({ model: 'vendor-video-upscale', input: { video_url: corpus.vfr, upscale_factor: '2' } }),
      {
        localize: async (source) => ({ path: source, bytes: 1, source }),
        probeMedia: async () => info,
        probeImage: async () => Promise.reject(new Error('no image')),
      },
      undefined,
      {
        limits: DEFAULT_WORK_LIMITS,
        hardware: HAND,
        kinds: { lipsync: { maxOutputPercent: 200, secondsPerFrame: 0 } },
        timeLimitSeconds: { image: 1e6, video: 1e6, lipsync: 1e6, music: 1e6, 'music-video': 1e6 },
        srNetwork: async () => ({ ...NET, scale: 2 }),
      },
    );
    expect((quoted.quote as { estimated_frames?: number }).estimated_frames).toBe(outcome.frames);
    expect(outcome.frameRate).toBe('30/1');
    const inTimes = await packetTimes(corpus.vfr, 'v:0');
    expect(inTimes).toHaveLength(45);
    // The input spans to its last frame's end (the muxer gave that one 1/30 s): that span at 30 fps.
    const span = inTimes.at(-1)! - inTimes[0]! + 1 / 30;
    expect(outcome.frames).toBe(Math.round(span * 30));
    const outTimes = await packetTimes(outcome.outputPath, 'v:0');
    expect(outTimes).toHaveLength(outcome.frames);
    // Each output frame shows the input frame on screen at its time (within half an output frame).
    const inFrames = await decodeRgb(corpus.vfr, 48, 32);
    const outFrames = await decodeRgb(outcome.outputPath, 48, 32);
    const shown = new Set<number>();
    outFrames.forEach((frame, j) => {
      let best = 0;
      inFrames.forEach((candidate, i) => {
        if (psnr(frame, candidate) > psnr(frame, inFrames[best]!)) best = i;
      });
      const t = outTimes[j]! - outTimes[0]!;
      const expected = inTimes.findLastIndex((at) => at - inTimes[0]! <= t + 1 / 60);
      expect(best, `output frame ${j} at ${t.toFixed(3)} s`).toBe(expected);
      shown.add(best);
    });
    expect(shown.size).toBe(45);
    // Picture and sound start together and end together.
    const [aIn, aOut] = [await packetTimes(corpus.vfr, 'a:0'), await packetTimes(outcome.outputPath, 'a:0')];
    expect(Math.abs(outTimes[0]! - aOut[0]! - (inTimes[0]! - aIn[0]!))).toBeLessThan(1 / 60);
    expect(outTimes.at(-1)! + 1 / 30).toBeCloseTo(2, 1);
  });

  it('variable frame rate with sound running 0.4 s past the last frame: the quote counts the frames processed, not the sound', async () => {
    const longer = join(dir, 'vfr-long-audio.mp4');
    await run(resolveFfmpeg(), [
      '-v',
      'error',
      '-i',
      corpus.vfr,
      '-f',
      'lavfi',
      '-i',
      'sine=f=440:r=48000:d=2.4',
      '-map',
      '0:v',
      '-map',
      '1:a',
      '-c:v',
      'copy',
      '-c:a',
      'aac',
      longer,
    ]);
    const { info, outcome } = await upscale(longer, '2');
    expect(info.durationSeconds).toBeGreaterThan(2.3);
    const quoted = await quoteJob(
      parseJob({ model: 'vendor-video-upscale', input: { video_url: longer, upscale_factor: '2' } }),
      {
        localize: async (source) => ({ path: source, bytes: 1, source }),
        probeMedia: async () => info,
        probeImage: async () => Promise.reject(new Error('no image')),
      },
      undefined,
      {
        limits: DEFAULT_WORK_LIMITS,
        hardware: HAND,
        kinds: { lipsync: { maxOutputPercent: 200, secondsPerFrame: 0 } },
        timeLimitSeconds: { image: 1e6, video: 1e6, lipsync: 1e6, music: 1e6, 'music-video': 1e6 },
        srNetwork: async () => ({ ...NET, scale: 2 }),
      },
    );
    expect((quoted.quote as { estimated_frames?: number }).estimated_frames).toBe(outcome.frames);
    expect(await packetTimes(outcome.outputPath, 'v:0')).toHaveLength(outcome.frames);
  });
});

describe('every stream kept', () => {
  it('Matroska: Matroska out with both audio tracks copied (AAC and Opus) with language, title and default flag, SubRip subtitles, chapters, title and creation time; the location removed', async () => {
    const { outcome } = await upscale(corpus.tracks, '2');
    expect(outcome.format).toEqual({ container: 'mkv', ext: 'mkv', mediaType: 'video/x-matroska' });
    const out = await fileFacts(outcome.outputPath);
    expect(streamLabels(out)).toEqual(['v:h264(8)', 'a:aac(eng)', 'a:opus(fra)', 's:subrip(eng)']);
    const audio = out.streams.filter((s) => s.codec_type === 'audio');
    expect(audio.map((a) => a.tags['title'])).toEqual(['Main', 'Commentaire']);
    expect(audio.map((a) => a.disposition['default'])).toEqual([1, 0]);
    expect(out.chapters.map((c) => c.title)).toEqual(['Opening', 'Ending']);
    expect(out.chapters[1]?.start).toBeCloseTo(0.5, 2);
    expect(out.tags['title']).toBe('Fidelity corpus');
    expect(out.tags['creation_time']).toMatch(/^2024-05-01T10:20:30/);
    expect(Object.keys(out.tags).filter((k) => /location/i.test(k))).toEqual([]);
    expect(outcome.streams).toEqual({ kept: 3, dropped: [] });
    // Matroska puts AAC's priming packet first and the video 23 ms later: the start is kept to the millisecond.
    const start = async (path: string): Promise<number> =>
      (await packetTimes(path, 'v:0'))[0]! - (await packetTimes(path, 'a:0'))[0]!;
    expect(await start(corpus.tracks)).toBeGreaterThan(0.01);
    expect(Math.abs((await start(outcome.outputPath)) - (await start(corpus.tracks)))).toBeLessThan(0.002);
  });

  it('copies AAC untouched: the same packets, byte for byte in size and time', async () => {
    const { outcome } = await upscale(corpus.hdr10, '2');
    const [inAudio, outAudio] = [await packetTimes(corpus.hdr10, 'a:0'), await packetTimes(outcome.outputPath, 'a:0')];
    expect(outAudio).toEqual(inAudio);
  });
});

describe('exact sizes', () => {
  it('321x181 at factor 1 comes out 321x181 (4:4:4), reported as delivered; its cover art copied, its timecode track written again', async () => {
    const { outcome } = await upscale(corpus.odd, '1');
    const out = await fileFacts(outcome.outputPath);
    const video = pictureOf(out);
    // The cover art is copied as it was, not upscaled and not taken for the video; the timecode
    // track (`tmcd`, a data stream ffprobe names no codec for) starts where it started.
    const labels = ['v:h264(8)', 'a:aac', 'd:tmcd(eng)', 'cover:png'];
    expect(streamLabels(await fileFacts(corpus.odd))).toEqual(labels);
    expect(streamLabels(out)).toEqual(labels);
    expect(out.streams[2]).toMatchObject({ codec_tag_string: 'tmcd', tags: { timecode: '01:02:03:04' } });
    expect(outcome.streams).toEqual({ kept: 3, dropped: [] });
    expect(out.streams.find((s) => s.disposition['attached_pic'] === 1)).toMatchObject({ width: 32, height: 32 });
    expect([video.width, video.height]).toEqual([321, 181]);
    expect([outcome.width, outcome.height]).toEqual([321, 181]);
    expect(video.pix_fmt).toBe('yuv444p');
    // Close to the input everywhere, the last row and column included (no smeared padding).
    const [input] = await decodeRgb(corpus.odd, 321, 181);
    const [output] = await decodeRgb(outcome.outputPath, 321, 181);
    expect(psnr(input!, output!)).toBeGreaterThan(22);
  });
});
