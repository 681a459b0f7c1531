/**
 * The streaming video pipeline end to end: real ffmpeg, the real converted ESRGAN weights, tiny
 * synthetic clips made here (testsrc2 + sine) and a cut of a real video. Frame counts, rates,
 * durations, sizes, audio and rotation are compared with the input as ffprobe measures both;
 * the pixels are compared with the network's own output on the same decoded frame.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upscaleRgb, SessionCache, createSrModelLoader, parseSrModelChoices } from '../../../../src/inference/index.js';
import { JobError, ProcessingError } from '../../../../src/errors.js';
import { pipelineFailure, type UpscaleFactor } from '../../../../src/jobs/index.js';
import { allowedFrames, probeMedia, type MediaInfo, resolveFfmpeg } from '../../../../src/media/index.js';
import { countingLoader } from '../../../../bench/video/network-work.js';
import { checkEncoder, videoResultFormat } from '../../../../src/video/index.js';
import {
  type VideoProgress,
  type VideoUpscaleOutcome,
  upscaleVideoFile,
} from '../../../../src/kinds/video-upscale/pipeline/video-pipeline.js';
import { ffmpeg, makeTempDir } from '../../../media/helpers.js';
import { audioOf, decodeRgb, processesMatching, psnr, streamFacts, videoOf } from './video-helpers.js';

const MEGAMIND = '/usr/share/doc/opencv-doc/examples/data/Megamind.avi';
const sessions = new SessionCache({ executionProviders: ['cpu'] });
// The pipeline's mechanics on the cheap x2/x4 networks; the default x4 network has a test of its own.
const loadModel = createSrModelLoader({
  sessions,
  choices: parseSrModelChoices('video=esrgan-slim-x2,video:4=esrgan-slim-x4'),
});
const x264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'];
const picture = (size: string, rate = '25') => ['-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=${rate}`];
const tone = ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000'];

let dir: string;
let cleanup: () => Promise<void>;
const at = (name: string): string => join(dir, name);
let outputs = 0;

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('video-pipeline'));
  await Promise.all([
    ffmpeg([...picture('96x64'), ...tone, '-frames:v', '12', '-t', '0.48', ...x264, '-c:a', 'aac', at('av.mp4')]),
    ffmpeg([...picture('96x64'), '-frames:v', '10', ...x264, at('silent.mp4')]),
    ffmpeg([
      ...picture('80x48', '30000/1001'),
      ...tone,
      '-frames:v',
      '12',
      '-t',
      '0.4',
      ...x264,
      '-c:a',
      'aac',
      at('ntsc.mov'),
    ]),
    // 4:2:0 cannot have odd sides: the odd clip is 4:4:4.
    ffmpeg([
      ...picture('64x48'),
      ...tone,
      '-frames:v',
      '10',
      '-t',
      '0.4',
      '-vf',
      'format=yuv444p,crop=63:47:0:0',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-pix_fmt',
      'yuv444p',
      '-c:a',
      'libopus',
      at('odd-opus.mkv'),
    ]),
    ffmpeg([...picture('64x48'), ...tone, '-frames:v', '10', '-t', '0.4', ...x264, '-c:a', 'aac', at('upright.mp4')]),
    ffmpeg([
      ...picture('64x48'),
      '-t',
      '2',
      '-vf',
      "select='lt(mod(n\\,10)\\,3)+eq(mod(n\\,10)\\,7)'",
      '-fps_mode',
      'vfr',
      ...x264,
      at('vfr.mp4'),
    ]),
    // A real video: a cut of OpenCV's Megamind sample (MPEG-4 Part 2 + AC-3), made small.
    // (Its AC-3 is re-encoded: a cut at 0.5 s leaves a truncated first AC-3 frame that no muxer keeps.)
    ffmpeg([
      '-fflags',
      '+genpts',
      '-i',
      MEGAMIND,
      '-t',
      '0.5',
      '-vf',
      'scale=96:70',
      ...x264,
      '-c:a',
      'ac3',
      '-b:a',
      '96k',
      at('megamind.mkv'),
    ]),
    ffmpeg([
      ...picture('96x64'),
      ...tone,
      '-t',
      '1',
      ...x264,
      '-c:a',
      'aac',
      '-movflags',
      '+faststart',
      at('faststart.mp4'),
    ]),
    ffmpeg([...picture('96x64'), '-t', '6', ...x264, at('long.mp4')]),
    // Two audio tracks, the second marked default: that one is the track MediaInfo describes and the one kept.
    ffmpeg([
      ...picture('64x48'),
      ...tone,
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=880:sample_rate=44100',
      '-map',
      '0:v',
      '-map',
      '1:a',
      '-map',
      '2:a',
      '-frames:v',
      '10',
      '-t',
      '0.4',
      ...x264,
      '-c:a:0',
      'libopus',
      '-c:a:1',
      'aac',
      '-disposition:a:0',
      '0',
      '-disposition:a:1',
      'default',
      at('two-tracks.mkv'),
    ]),
    ffmpeg([
      ...picture('64x48'),
      '-frames:v',
      '8',
      ...x264,
      '-flags',
      '+ildct+ilme',
      '-x264opts',
      'tff=1',
      '-field_order',
      'tt',
      at('interlaced.mkv'),
    ]),
  ]);
  // A phone-style clip: stored landscape, displayed portrait through the rotation metadata.
  await ffmpeg(['-i', at('upright.mp4'), '-c', 'copy', '-metadata:s:v:0', 'rotate=90', at('rotated.mp4')]);
  // Damaged inputs that still probe (the index is at the front): garbage inside the frames, and a cut-off file.
  const whole = await readFile(at('faststart.mp4'));
  const garbled = Buffer.from(whole);
  let seed = 7;
  for (let i = Math.floor(whole.length / 3); i < Math.floor(whole.length / 3) + 3000; i += 1) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    garbled[i] = seed & 0xff;
  }
  await writeFile(at('garbled.mp4'), garbled);
  await writeFile(at('truncated.mp4'), whole.subarray(0, Math.floor(whole.length * 0.6)));
});

afterAll(async () => {
  await sessions.release();
  await cleanup();
});

async function newOutDir(): Promise<string> {
  outputs += 1;
  const out = at(`out-${outputs}`);
  await mkdir(out);
  return out;
}

interface Run {
  info: MediaInfo;
  outcome: VideoUpscaleOutcome;
  outDir: string;
  progress: VideoProgress[];
}

async function upscale(
  name: string,
  factor: UpscaleFactor,
  extra: Partial<Parameters<typeof upscaleVideoFile>[0]> = {},
): Promise<Run> {
  const info = await probeMedia(at(name));
  const outDir = await newOutDir();
  const progress: VideoProgress[] = [];
  const outcome = await upscaleVideoFile(
    {
      inputPath: at(name),
      outputPath: join(outDir, `out.${videoResultFormat(info.container).ext}`),
      factor,
      info,
      onProgress: (p) => progress.push(p),
      ...extra,
    },
    loadModel,
  );
  return { info, outcome, outDir, progress };
}

describe('upscaleVideoFile', () => {
  it.each([
    // name, factor, output size, audio handling, video duration slack in frames
    ['av.mp4', '2', [192, 128], 'copy', 1],
    ['av.mp4', '4', [384, 256], 'copy', 1],
    ['av.mp4', '1', [96, 64], 'copy', 1],
    ['ntsc.mov', '2', [160, 96], 'copy', 1],
    ['silent.mp4', '2', [192, 128], 'none', 1],
    // Matroska in, Matroska out: Opus copied as it is.
    ['odd-opus.mkv', '1', [63, 47], 'copy', 1],
    ['odd-opus.mkv', '2', [126, 94], 'copy', 1],
    ['rotated.mp4', '2', [96, 128], 'copy', 1],
    // The real clip starts 42 ms after its audio and lost one frame in its source (a 83 ms step):
    // passthrough keeps the start and every frame, the gap closes (docs: video-geometry.ts).
    ['megamind.mkv', '2', [192, 140], 'copy', 2],
    ['interlaced.mkv', '2', [128, 96], 'none', 1],
  ] as const)(
    '%s at factor %s: %j with the same frames, rate, durations; audio %s',
    async (name, factor, size, audio, slack) => {
      const { outcome, outDir, progress } = await upscale(name, factor);
      const input = await streamFacts(at(name));
      const output = await streamFacts(outcome.outputPath);
      const [vin, vout] = [videoOf(input), videoOf(output)];

      expect([outcome.width, outcome.height]).toEqual(size);
      expect([vout.width, vout.height]).toEqual(size);
      expect(vout.codec).toBe('h264');
      expect(vout.frames).toBe(vin.frames);
      expect(outcome.frames).toBe(vin.frames);
      expect(vout.rate).toBe(vin.rate);
      expect(outcome.frameRate).toBe(vin.rate);
      // MP4 and Matroska round stream durations differently; the frame count above is the exact check.
      expect(Math.abs(vout.duration - vin.duration)).toBeLessThanOrEqual(slack / outcome.fps + 0.002);
      // The picture is upright in the pixels: no rotation left for the player to apply.
      expect(vout.rotation ?? 0).toBe(0);

      expect(outcome.audio).toBe(audio);
      const [ain, aout] = [audioOf(input), audioOf(output)];
      if (audio === 'none') {
        expect(aout).toBeUndefined();
      } else {
        expect(aout?.codec).toBe(audio === 'copy' ? ain?.codec : 'aac');
        // Copied audio is the same packets; AAC re-encoding may add a frame of padding. Opus copied into
        // Matroska: its span (the DURATION tag less the start) counts its 6.5 ms pre-skip twice, as
        // ffmpeg moves the file's start and Matroska's reader takes the codec delay off (docs/contract.md, "Streams").
        const spanSlack = audio === 'copy' ? (ain?.codec === 'opus' ? 0.014 : 0.001) : 0.03;
        expect(Math.abs((aout?.duration ?? 0) - (ain?.duration ?? 0))).toBeLessThan(spanSlack);
        // A/V sync: the video starts where it started relative to the audio (Opus's 6.5 ms pre-skip
        // shows as a negative start in Matroska and counts double in this measure: 20 ms, half a frame).
        expect(Math.abs(vout.start - (aout?.start ?? 0) - (vin.start - (ain?.start ?? 0)))).toBeLessThan(0.02);
      }
      expect(progress.at(-1)).toMatchObject({ framesDone: vin.frames });
      expect(await readdir(outDir)).toEqual([`out.${outcome.format.ext}`]);
      expect(outcome.format.ext).toBe(name.endsWith('.mkv') ? 'mkv' : 'mp4');
    },
  );

  it('keeps every audio track of several, in order (Opus and AAC copied into Matroska)', async () => {
    const { outcome, info } = await upscale('two-tracks.mkv', '2');
    expect(info.audio?.codec).toBe('aac');
    const output = await streamFacts(outcome.outputPath);
    expect(output.filter((s) => s.type === 'audio').map((s) => s.codec)).toEqual(['opus', 'aac']);
    expect(outcome.audio).toBe('copy');
    expect(outcome.streams).toEqual({ kept: 2, dropped: [] });
  });

  it('29.97 fps stays 30000/1001 and the MOV input keeps every frame', async () => {
    const { outcome } = await upscale('ntsc.mov', '2');
    expect(outcome.frameRate).toBe('30000/1001');
    expect(outcome.fps).toBeCloseTo(29.97, 2);
    expect(outcome.frames).toBe(12);
    expect(outcome.durationSeconds).toBeCloseTo(12 / (30000 / 1001), 6);
  });

  it('shows the rotated clip upright: the output matches the input as a player displays it', async () => {
    const { outcome } = await upscale('rotated.mp4', '2');
    // The input as displayed (ffmpeg applies the rotation), and the output brought back to that size.
    const [shown] = await decodeRgb(at('rotated.mp4'), 48, 64);
    const [back] = await decodeRgb(
      outcome.outputPath,
      48,
      64,
      'scale=w=48:h=64:flags=area:in_color_matrix=auto,format=rgb24',
    );
    const [wrongWay] = await decodeRgb(
      at('rotated.mp4'),
      48,
      64,
      'transpose=dir=clock_flip,scale=w=48:h=64:in_color_matrix=auto,format=rgb24',
    );
    expect(psnr(back!, shown!)).toBeGreaterThan(24);
    expect(psnr(back!, wrongWay!)).toBeLessThan(psnr(back!, shown!) - 6);
  });

  it('the frames are the network output, not a plain resize', async () => {
    const { outcome } = await upscale('av.mp4', '2', { encoder: { crf: 8 } });
    const k = 5;
    const input = await decodeRgb(
      at('av.mp4'),
      96,
      64,
      'scale=w=96:h=64:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=bt601,format=rgb24',
    );
    const output = await decodeRgb(outcome.outputPath, 192, 128);
    expect(output).toHaveLength(input.length);
    const loaded = await loadModel('video', '2');
    const network = await upscaleRgb(
      loaded.model,
      { data: input[k]!, width: 96, height: 64, channels: 3 },
      loaded.tiling,
    );
    const bicubic = await sharp(input[k]!, { raw: { width: 96, height: 64, channels: 3 } })
      .resize(192, 128, { kernel: 'cubic' })
      .raw()
      .toBuffer();
    const toNetwork = psnr(output[k]!, network.data);
    const toBicubic = psnr(output[k]!, bicubic);
    // Within H.264 and 4:2:0 chroma's loss of the network's own result on the same frame (about 35.7 dB
    // at CRF 8), and far from a bicubic resize (about 24.6 dB).
    expect(toNetwork).toBeGreaterThan(33);
    expect(toNetwork).toBeGreaterThan(toBicubic + 6);
  });

  it('with the default x4 network, factor "2" is the network output brought down to x2 by a Lanczos resize', async () => {
    const defaults = createSrModelLoader({ sessions });
    const info = await probeMedia(at('av.mp4'));
    const outDir = await newOutDir();
    const outcome = await upscaleVideoFile(
      { inputPath: at('av.mp4'), outputPath: join(outDir, 'out.mp4'), factor: '2', info, encoder: { crf: 8 } },
      defaults,
    );
    expect(outcome.model).toBe('realesrgan-x4fast');
    const k = 5;
    const input = await decodeRgb(
      at('av.mp4'),
      96,
      64,
      'scale=w=96:h=64:flags=bicubic+accurate_rnd+full_chroma_int:in_color_matrix=bt601,format=rgb24',
    );
    const output = await decodeRgb(outcome.outputPath, 192, 128);
    const loaded = await defaults('video', '2');
    expect(loaded.model.scale).toBe(4);
    const network = await upscaleRgb(
      loaded.model,
      { data: input[k]!, width: 96, height: 64, channels: 3 },
      loaded.tiling,
    );
    const down = await sharp(network.data, { raw: { width: 384, height: 256, channels: 3 } })
      .resize(192, 128, { kernel: 'lanczos3' })
      .raw()
      .toBuffer();
    const bicubic = await sharp(input[k]!, { raw: { width: 96, height: 64, channels: 3 } })
      .resize(192, 128, { kernel: 'cubic' })
      .raw()
      .toBuffer();
    expect(psnr(output[k]!, down)).toBeGreaterThan(32);
    expect(psnr(output[k]!, down)).toBeGreaterThan(psnr(output[k]!, bicubic) + 5);
  });

  it('tags the output BT.709 and keeps the colours of an untagged (BT.601) input', async () => {
    const { outcome } = await upscale('silent.mp4', '2');
    expect(videoOf(await streamFacts(outcome.outputPath)).colourSpace).toBe('bt709');
    const [input] = await decodeRgb(at('silent.mp4'), 96, 64);
    const [output] = await decodeRgb(
      outcome.outputPath,
      96,
      64,
      'scale=w=96:h=64:flags=area:in_color_matrix=auto,format=rgb24',
    );
    const mean = (b: Buffer, c: number) => b.reduce((sum, v, i) => (i % 3 === c ? sum + v : sum), 0) / (b.length / 3);
    for (const c of [0, 1, 2]) expect(Math.abs(mean(output!, c) - mean(input!, c))).toBeLessThan(2);
  });

  it('makes variable frame rate input constant at its highest rate (25 fps here), the same duration', async () => {
    const { outcome, info } = await upscale('vfr.mp4', '2');
    expect(info.video?.variableFrameRate).toBe(true);
    expect(outcome.timing).toBe('cfr');
    expect(outcome.frameRate).toBe('25/1');
    const input = videoOf(await streamFacts(at('vfr.mp4')));
    const output = videoOf(await streamFacts(outcome.outputPath));
    expect(output.frames).toBe(outcome.frames);
    // Highest rate x duration: more frames than the input's (frames that lasted longer are shown again).
    expect(Math.abs(outcome.frames - input.duration * 25)).toBeLessThanOrEqual(1);
    expect(outcome.frames).toBeGreaterThan(input.frames ?? 0);
    expect(Math.abs(output.duration - input.duration)).toBeLessThan(0.15);
  });

  it('falls back to libx264 with a log line when the configured hardware encoder cannot run', async () => {
    const verdict = await checkEncoder(resolveFfmpeg(), { codec: 'h264_nvenc', crf: 18, preset: 'fast' });
    const warnings: string[] = [];
    const logger = { info: () => {}, warn: (_: object, msg: string) => warnings.push(msg) };
    const { outcome } = await upscale('silent.mp4', '2', { encoder: { codec: 'h264_nvenc' }, logger });
    if (verdict.usable) {
      expect(outcome.encoder).toBe('h264_nvenc');
    } else {
      expect(outcome.encoder).toBe('libx264');
      expect(warnings.join('\n')).toMatch(/h264_nvenc is not usable here .*encoding with libx264/);
    }
  });

  describe('failures', () => {
    async function expectClean(marker: string, outDir: string): Promise<void> {
      expect(await processesMatching(marker)).toEqual([]);
      expect(await readdir(outDir)).toEqual([]);
    }

    it.each(['garbled.mp4', 'truncated.mp4'])(
      'a damaged input (%s) fails with PROBE_FAILED and the decoder reason, leaving nothing behind',
      async (name) => {
        const info = await probeMedia(at(name));
        const outDir = await newOutDir();
        const started = performance.now();
        const error = await upscaleVideoFile(
          { inputPath: at(name), outputPath: join(outDir, 'out.mp4'), factor: '2', info },
          loadModel,
        ).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(JobError);
        expect((error as JobError).code).toBe('PROBE_FAILED');
        expect((error as JobError).message).toMatch(/^The video could not be decoded: .*(NAL|corrupt|partial|Invalid)/);
        // ffmpeg's text, but not this host's paths.
        expect((error as JobError).message).not.toContain(dir);
        expect(performance.now() - started).toBeLessThan(20_000);
        await expectClean(dir, outDir);
      },
    );

    it('a file that grew after its quote ends the job before any network work (the backstop)', async () => {
      const info = await probeMedia(at('silent.mp4'));
      const grown = at('grown.mp4');
      await writeFile(grown, await readFile(at('long.mp4')));
      const outDir = await newOutDir();
      const counting = countingLoader(loadModel);
      const error = await upscaleVideoFile(
        { inputPath: grown, outputPath: join(outDir, 'out.mp4'), factor: '2', info },
        counting.load,
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JobError);
      expect((error as JobError).code).toBe('PROBE_FAILED');
      expect((error as JobError).message).toContain(
        `Expected at most ${allowedFrames(10)} video frames, as quoted, but the file holds more`,
      );
      expect(counting.tiles()).toBe(0);
      await expectClean(dir, outDir);
    });

    it('an encoder that fails (output folder missing) stops the decoder too and reports the encoder', async () => {
      const info = await probeMedia(at('long.mp4'));
      const outDir = await newOutDir();
      const error = await upscaleVideoFile(
        { inputPath: at('long.mp4'), outputPath: join(outDir, 'missing', 'out.mp4'), factor: '2', info },
        loadModel,
      ).catch((e: unknown) => e);
      // A processing failure of the pipeline; the contract's edge gives it the kind's code.
      expect(error).toBeInstanceOf(ProcessingError);
      expect(pipelineFailure(error, 'video').code).toBe('UPSCALE_FAILED');
      expect((error as ProcessingError).message).toMatch(/^The video encoder failed: .*(No such file|directory)/);
      await expectClean(dir, outDir);
    });

    it('an abort mid-run kills both processes promptly and removes the partial output', async () => {
      const info = await probeMedia(at('long.mp4'));
      const outDir = await newOutDir();
      const controller = new AbortController();
      let abortedAt = 0;
      let niceness: number[] = [];
      const error = await upscaleVideoFile(
        {
          inputPath: at('long.mp4'),
          outputPath: join(outDir, 'out.mp4'),
          factor: '2',
          info,
          signal: controller.signal,
          progressIntervalMs: 0,
          onProgress: (p) => {
            if (p.framesDone >= 5 && abortedAt === 0) {
              // Both ffmpeg processes run below the worker's priority (inference first).
              const pids = execFileSync('pgrep', ['-f', dir], { encoding: 'utf8' }).trim().split('\n');
              niceness = pids.map((pid) =>
                Number(execFileSync('ps', ['-o', 'ni=', '-p', pid], { encoding: 'utf8' }).trim()),
              );
              abortedAt = performance.now();
              controller.abort(new Error('cancelled by the test'));
            }
          },
        },
        loadModel,
      ).catch((e: unknown) => e);
      expect(abortedAt).toBeGreaterThan(0);
      expect(niceness).toEqual([getPriority() + 5, getPriority() + 5]);
      expect((error as Error).message).toBe('cancelled by the test');
      expect(performance.now() - abortedAt).toBeLessThan(3_000);
      await expectClean(dir, outDir);
      expect(existsSync(join(outDir, 'out.mp4'))).toBe(false);
    });

    it('an already aborted signal starts nothing', async () => {
      const info = await probeMedia(at('av.mp4'));
      const outDir = await newOutDir();
      const error = await upscaleVideoFile(
        {
          inputPath: at('av.mp4'),
          outputPath: join(outDir, 'out.mp4'),
          factor: '2',
          info,
          signal: AbortSignal.abort(new Error('too late')),
        },
        loadModel,
      ).catch((e: unknown) => e);
      expect((error as Error).message).toBe('too late');
      await expectClean(dir, outDir);
    });

    it.each([
      [
        'VIDEO_TOO_LONG',
        { durationSeconds: 60.5 },
        /^Expected the video duration to be at most 60 seconds but received 60.5 seconds$/,
      ],
      [
        'PROBE_FAILED',
        { container: 'webm' as const },
        /^Expected video_url to be MP4, MOV or MKV but received WebM content$/,
      ],
      [
        'PROBE_FAILED',
        { video: undefined },
        /^Expected video_url to be a video with a video stream but received MP4 content without one$/,
      ],
    ])('refuses before starting anything: %s for %j', async (code, change, message) => {
      // Object.assign, not a spread: exactOptionalPropertyTypes refuses `video: undefined` in a MediaInfo literal.
      const info = Object.assign(await probeMedia(at('av.mp4')), change);
      const outDir = await newOutDir();
      const error = await upscaleVideoFile(
        { inputPath: at('av.mp4'), outputPath: join(outDir, 'out.mp4'), factor: '2', info },
        loadModel,
      ).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(JobError);
      expect((error as JobError).code).toBe(code);
      expect((error as JobError).message).toMatch(message);
      await expectClean(dir, outDir);
    });
  });
});
