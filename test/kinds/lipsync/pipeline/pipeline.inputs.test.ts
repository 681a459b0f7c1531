/**
 * lipsyncFile on other inputs: GIF and WebM videos, HLG and PQ 10-bit HEVC (kept HDR, or tone-mapped
 * with hdr "sdr"), a video without a face, two faces with and without active_speaker, and the model
 * that is not installed.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache } from '../../../../src/inference/index.js';
import { ProcessingError } from '../../../../src/errors.js';
import {
  lipsyncFile,
  type LipsyncRequest,
  type RgbFrame,
  releaseLipsyncThreads,
  parseLipsyncModelMapping,
} from '../../../../src/kinds/lipsync/pipeline/index.js';
import {
  allowedAudioSeconds,
  allowedFrames,
  resolveFfmpeg,
  runProcess,
  type MediaInfo,
} from '../../../../src/media/index.js';
import {
  colourPlan,
  colourSource,
  decodeColourFilters,
  encodeColourFilters,
  probeVideoExtras,
} from '../../../../src/video/index.js';
import { fileFacts, pictureOf } from '../../../../bench/fidelity/video-facts.js';
import { expectCorpusHdr10Metadata } from '../../../helpers/hdr10-metadata.js';
import {
  FPS,
  SIDE,
  TWO_FACES,
  changedPixels,
  childProcesses,
  encodeClip,
  lipsyncRequest,
  faceFrames,
  mouthInFrame,
  outputFacts,
  outputFrames,
  patternClip,
  probe,
  sourceFrames,
  speechClip,
  twoFaceClip,
} from './pipeline-fixtures.js';

describe('lip-sync pipeline inputs', () => {
  const sessions = new SessionCache({ thread: false, threads: 1 });
  const deps = { sessions, lipsyncModelMapping: parseLipsyncModelMapping('wav2lip-test') };
  let dir: string;
  let speech: { file: string; info: MediaInfo };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'lipsync-inputs-'));
    const file = await speechClip(path.join(dir, 'speech.mp3'));
    speech = { file, info: await probe(file) };
  });

  afterAll(async () => {
    await releaseLipsyncThreads();
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  });

  function request(video: string, outputName: string, extra: Partial<LipsyncRequest> = {}): Promise<LipsyncRequest> {
    return lipsyncRequest(video, speech, path.join(dir, outputName), extra);
  }

  it.each(['gif', 'webm'] as const)(
    'lip-syncs a %s video: its frames, size and rate, pixels away from the mouth untouched',
    async (format) => {
      const frames = 30;
      const clip = await encodeClip(
        path.join(dir, `face.${format}`),
        await faceFrames(frames),
        { width: SIDE, height: SIDE },
        format,
        {
          ...(format === 'webm' ? { audio: speech.file } : {}),
        },
      );
      const req = await request(clip, `${format}.mp4`);
      expect(req.videoInfo.container).toBe(format);
      // The GIF runs the network on the calling thread, the WebM on its worker thread: both paths.
      const outcome = await lipsyncFile(req, { ...deps, modelThread: format !== 'gif' });
      expect(outcome).toMatchObject({ frames, width: SIDE, height: SIDE, fps: FPS, drivenFrames: frames });
      const facts = await outputFacts(outcome.outputPath);
      expect(facts).toMatchObject({ frames, width: SIDE, height: SIDE });
      expect(Math.abs(facts.formatSeconds - frames / FPS)).toBeLessThanOrEqual(1 / FPS);

      const sources = await sourceFrames(clip, req.videoInfo);
      const out = await outputFrames(outcome.outputPath, SIDE, SIDE);
      expect(sources).toHaveLength(frames);
      for (let i = 0; i < frames; i += 1) {
        const m = mouthInFrame(i);
        const changed = changedPixels(sources[i] as RgbFrame, out[i] as RgbFrame);
        expect(changed.length).toBeGreaterThan(100);
        expect(changed.filter((p) => Math.abs(p.x - m.x) > 40 || p.y < m.y - 32 || p.y > m.y + 42)).toEqual([]);
      }
    },
  );

  it('lets frames without a face pass untouched, and sends a part-filled batch when only faceless frames follow', async () => {
    // 18 frames with the face (batches of 4: four full, one of 2), then 52 without: more than the
    // queue holds (3 batches + 4), so the last batch must go before it is full.
    const grey = Buffer.alloc(SIDE * SIDE * 3, 0x80);
    const clip = await encodeClip(
      path.join(dir, 'face-leaves.mp4'),
      [...(await faceFrames(18)), ...Array.from({ length: 52 }, () => grey)],
      { width: SIDE, height: SIDE },
      'mp4',
    );
    const req = await request(clip, 'face-leaves-out.mp4', { batch: 4, signal: AbortSignal.timeout(60_000) });
    const outcome = await lipsyncFile(req, deps);
    expect(outcome).toMatchObject({ frames: 70, drivenFrames: 18 });
    const sources = await sourceFrames(clip, req.videoInfo);
    const out = await outputFrames(outcome.outputPath, SIDE, SIDE);
    out.forEach((frame, i) => {
      const changed = changedPixels(sources[i] as RgbFrame, frame).length;
      if (i < 18) expect(changed).toBeGreaterThan(100);
      else expect(changed).toBe(0);
    });
  });

  it('keeps an odd-sized video at exactly its size (4:4:4), its last column and row real picture', async () => {
    const clip = await encodeClip(
      path.join(dir, 'odd.webm'),
      await faceFrames(20, { side: 161 }),
      { width: 161, height: 161 },
      'webm',
    );
    const req = await request(clip, 'odd.mp4', { lossless: false });
    expect([req.videoInfo.video?.width, req.videoInfo.video?.height]).toEqual([161, 161]);
    const outcome = await lipsyncFile(req, deps);
    expect([outcome.width, outcome.height]).toEqual([161, 161]);
    expect(await outputFacts(outcome.outputPath)).toMatchObject({ width: 161, height: 161, frames: 20 });
    const frame = (await outputFrames(outcome.outputPath, 161, 161))[5] as RgbFrame;
    const source = (await outputFrames(clip, 161, 161))[5] as RgbFrame;
    // The last column matches the source's last column (within the codecs' rounding), not a smeared copy.
    let diff = 0;
    for (let y = 0; y < 161; y += 1) {
      for (let c = 0; c < 3; c += 1)
        diff = Math.max(
          diff,
          Math.abs((frame.data[3 * (y * 161 + 160) + c] as number) - (source.data[3 * (y * 161 + 160) + c] as number)),
        );
    }
    expect(diff).toBeLessThan(40);
  });

  describe('HDR and 10-bit sources follow the video rule (docs/contract.md, "Video fidelity")', () => {
    const X265 = ['-c:v', 'libx265', '-preset', 'ultrafast', '-tag:v', 'hvc1'];
    const HDR10_SEI =
      'master-display=G(13250,34500)B(7500,3000)R(34000,16000)WP(15635,16450)L(10000000,1):max-cll=1000,400:hdr10=1';
    let hlg: string;
    let pq: string;

    /** The face clip made 10-bit HEVC with the given transfer (and its x265 parameters), BT.2020 tags throughout. */
    async function tenBit(name: string, transfer: string, params: string, tags: string[] = []): Promise<string> {
      const webm = await encodeClip(
        path.join(dir, `${name}-source.webm`),
        await faceFrames(12),
        { width: SIDE, height: SIDE },
        'webm',
      );
      const clip = path.join(dir, `${name}.mp4`);
      await runProcess(resolveFfmpeg(), [
        '-v',
        'error',
        '-y',
        '-i',
        webm,
        '-vf',
        'format=yuv420p10le',
        ...X265,
        '-x265-params',
        `log-level=error:colorprim=bt2020:transfer=${transfer}:colormatrix=bt2020nc${params}`,
        '-color_primaries',
        'bt2020',
        '-color_trc',
        transfer,
        '-colorspace',
        'bt2020nc',
        ...tags,
        clip,
      ]);
      return clip;
    }

    /**
     * The 10-bit luma plane of every frame: of a file as stored, or (`vf`) of the source taken
     * through a filter chain in one ffmpeg process.
     */
    async function lumaPlanes(file: string, vf?: string): Promise<Uint16Array[]> {
      const filter = vf === undefined ? [] : ['-vf', vf];
      const { stdout } = await runProcess(
        resolveFfmpeg(),
        ['-v', 'error', '-i', file, ...filter, '-f', 'rawvideo', '-pix_fmt', 'yuv420p10le', 'pipe:1'],
        { maxStdoutBytes: 64 * 1024 * 1024 },
      );
      const frame = SIDE * SIDE * 3; // bytes of one 4:2:0 10-bit frame: 1.5 samples per pixel, 2 bytes each
      const planes: Uint16Array[] = [];
      for (let at = 0; at + frame <= stdout.length; at += frame) {
        const plane = new Uint16Array(SIDE * SIDE);
        new Uint8Array(plane.buffer).set(stdout.subarray(at, at + SIDE * SIDE * 2));
        planes.push(plane);
      }
      return planes;
    }

    /** Per frame, the largest luma difference away from the mouth, and the pixels at the mouth that differ by more than 4 levels. */
    function compare(
      a: readonly Uint16Array[],
      b: readonly Uint16Array[],
    ): { away: number; awayDiffering: number; mouth: number } {
      let away = 0;
      let awayDiffering = 0;
      let mouth = 0;
      for (let i = 0; i < a.length; i += 1) {
        const m = mouthInFrame(i);
        for (let y = 0; y < SIDE; y += 1) {
          for (let x = 0; x < SIDE; x += 1) {
            const d = Math.abs(
              ((a[i] as Uint16Array)[y * SIDE + x] as number) - ((b[i] as Uint16Array)[y * SIDE + x] as number),
            );
            if (Math.abs(x - m.x) > 40 || y < m.y - 32 || y > m.y + 42) {
              away = Math.max(away, d);
              if (d > 0) awayDiffering += 1;
            } else if (d > 4) mouth += 1;
          }
        }
      }
      return { away, awayDiffering, mouth };
    }

    beforeAll(async () => {
      hlg = await tenBit('hlg', 'arib-std-b67', '', [
        '-metadata',
        'title=Interview',
        '-metadata',
        'location=+48.8584+002.2945/',
        // A phone's QuickTime keys, its location among them.
        '-movflags',
        'use_metadata_tags',
        '-metadata',
        'com.apple.quicktime.make=Apple',
        '-metadata',
        'com.apple.quicktime.location.ISO6709=+48.8584+002.2945/',
      ]);
      pq = await tenBit('pq', 'smpte2084', `:${HDR10_SEI}`);
    });

    it('HLG 10-bit: HEVC Main10 tagged BT.2020 / HLG, the face still found and driven; its title and QuickTime keys kept, its location removed', async () => {
      const outcome = await lipsyncFile(await request(hlg, 'hlg-out.mp4', { lossless: false }), deps);
      expect(outcome.drivenFrames).toBe(12);
      expect(outcome.colour).toEqual({ codec: 'hevc', bits: 10, transfer: 'arib-std-b67', toneMapped: false });
      expect(outcome.encoder.codec).toBe('libx265');
      const facts = await fileFacts(outcome.outputPath);
      expect(facts.tags['title']).toBe('Interview');
      expect(facts.tags['com.apple.quicktime.make']).toBe('Apple');
      expect(Object.keys(facts.tags).filter((k) => /location/i.test(k))).toEqual([]);
      const video = pictureOf(facts);
      expect(video).toMatchObject({
        codec_name: 'hevc',
        codec_tag_string: 'hvc1',
        pix_fmt: 'yuv420p10le',
        color_primaries: 'bt2020',
        color_space: 'bt2020nc',
        color_transfer: 'arib-std-b67',
        color_range: 'tv',
        width: SIDE,
        height: SIDE,
      });
      expect(video.profile).toBe('Main 10');
    });

    it('HLG 10-bit: nothing passes through 8 bits outside the mouth (lossless HEVC: the 16-bit round trip to the bit), and the mouth is drawn', async () => {
      const outcome = await lipsyncFile(
        await request(hlg, 'hlg-lossless.mp4', { lossless: false, encoder: { crf: 0 } }),
        deps,
      );
      const out = await lumaPlanes(outcome.outputPath);
      expect(out).toHaveLength(12);
      // What the pipeline does to a pixel it does not paste: the source's YUV to RGB and back with
      // the plan's matrices (video/colour.ts), in 16 bits; and the same through 8-bit RGB.
      const size = { width: SIDE, height: SIDE };
      const source = colourSource(await probeVideoExtras(hlg, 'mp4'));
      const plan = colourPlan(source, 'keep', size);
      expect(plan.depth).toBe(16);
      const through = (depth: 8 | 16): string =>
        [...decodeColourFilters({ ...plan, depth }, source, size), ...encodeColourFilters(plan, size)].join(',');
      const deep = await lumaPlanes(hlg, through(16));
      const shallow = await lumaPlanes(hlg, through(8));
      const kept = compare(deep, out);
      expect(kept.away).toBeLessThanOrEqual(1);
      expect(kept.mouth).toBeGreaterThan(12 * 100);
      // The check can see 8 bits: through rgb24 most of the picture comes back otherwise.
      expect(compare(deep, shallow).awayDiffering).toBeGreaterThan(12 * 1000);
    });

    it('PQ (HDR10): HEVC Main10 tagged BT.2020 / PQ, the mastering display and MaxCLL copied', async () => {
      const outcome = await lipsyncFile(await request(pq, 'pq-out.mp4', { lossless: false }), deps);
      expect(outcome.drivenFrames).toBe(12);
      expect(outcome.colour).toEqual({ codec: 'hevc', bits: 10, transfer: 'smpte2084', toneMapped: false });
      const video = pictureOf(await fileFacts(outcome.outputPath));
      expect(video).toMatchObject({
        codec_name: 'hevc',
        codec_tag_string: 'hvc1',
        pix_fmt: 'yuv420p10le',
        color_primaries: 'bt2020',
        color_space: 'bt2020nc',
        color_transfer: 'smpte2084',
      });
      await expectCorpusHdr10Metadata(outcome.outputPath);
    });

    it('hdr "sdr": PQ tone-mapped to 8-bit H.264 tagged BT.709 throughout, the face still driven', async () => {
      const outcome = await lipsyncFile(await request(pq, 'pq-sdr.mp4', { lossless: false, hdr: 'sdr' }), deps);
      expect(outcome.drivenFrames).toBe(12);
      expect(outcome.colour).toEqual({ codec: 'h264', bits: 8, transfer: 'bt709', toneMapped: true });
      const video = pictureOf(await fileFacts(outcome.outputPath));
      expect(video).toMatchObject({
        codec_name: 'h264',
        pix_fmt: 'yuv420p',
        color_primaries: 'bt709',
        color_transfer: 'bt709',
        color_space: 'bt709',
      });
    });
  });

  it('refuses, before decoding anything, an audio that would make the output longer than 240 s', async () => {
    const clip = await patternClip(path.join(dir, 'short-video.mp4'), 1);
    const req = await request(clip, 'too-long.mp4', {
      syncMode: 'loop',
      audioInfo: { ...speech.info, durationSeconds: 300 },
    });
    await expect(lipsyncFile(req, deps)).rejects.toMatchObject({
      code: 'INPUT_TOO_LARGE',
      message: expect.stringContaining('at most 240 s'),
    });
    // cut_off follows the shorter input: the same audio is fine there (it fails later, on the missing face).
    await expect(lipsyncFile({ ...req, syncMode: 'cut_off' }, deps)).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringMatching(/no face/),
    });
  });

  describe('the backstop: inputs that changed after their quote', () => {
    it('a video grown after its quote ends the job in set-up, before the face pass or the network', async () => {
      const clip = await encodeClip(
        path.join(dir, 'grows.mp4'),
        await faceFrames(10),
        { width: SIDE, height: SIDE },
        'mp4',
      );
      const req = await request(clip, 'grown-out.mp4');
      await encodeClip(clip, await faceFrames(60), { width: SIDE, height: SIDE }, 'mp4');
      let detected = 0;
      await expect(lipsyncFile({ ...req, onProgress: () => (detected += 1) }, deps)).rejects.toMatchObject({
        code: 'PROBE_FAILED',
        message: expect.stringContaining(`Expected at most ${allowedFrames(10)} video frames, as quoted`),
      });
      expect(detected).toBe(0);
      expect((await readdir(dir)).filter((f) => f.startsWith('grown-out'))).toEqual([]);
    });

    it('an audio grown after its quote is decoded no further than quoted (plus the tolerance)', async () => {
      const clip = await encodeClip(
        path.join(dir, 'loops.mp4'),
        await faceFrames(10),
        { width: SIDE, height: SIDE },
        'mp4',
      );
      const voice = await speechClip(path.join(dir, 'grows.wav'), 1);
      const quoted = { file: voice, info: await probe(voice) };
      await speechClip(voice, 3);
      const outcome = await lipsyncFile(
        await lipsyncRequest(clip, quoted, path.join(dir, 'loop-out.mp4'), { syncMode: 'loop' }),
        deps,
      );
      expect(outcome.durationSeconds).toBeLessThanOrEqual(allowedAudioSeconds(quoted.info.durationSeconds) + 1 / FPS);
      expect(outcome.durationSeconds).toBeGreaterThanOrEqual(quoted.info.durationSeconds - 1 / FPS);
    });
  });

  it('fails with a processing failure (LIPSYNC_FAILED for the job) when the video shows no face, leaving nothing behind', async () => {
    const clip = await patternClip(path.join(dir, 'pattern.mp4'), 1);
    const attempt = lipsyncFile(await request(clip, 'pattern-out.mp4'), deps);
    await expect(attempt).rejects.toBeInstanceOf(ProcessingError);
    await expect(attempt).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringMatching(/no face was found in the video \(25 frames searched\)/),
    });
    expect((await readdir(dir)).filter((f) => f.startsWith('pattern-out') || f.includes('.partial'))).toEqual([]);
    expect(await childProcesses()).toEqual([]);
  });

  it('fails with the install instructions when no real lip-sync weights are installed and the test model is not selected', async () => {
    const clip = await patternClip(path.join(dir, 'unused.mp4'), 1);
    const attempt = lipsyncFile(await request(clip, 'no-weights.mp4'), { sessions });
    await expect(attempt).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringMatching(
        /^Expected lip-sync weights wav2lip for vendor-lipsync-2 but they are not installed .*install-lipsync-model.* or select the test model explicitly/,
      ),
    });
    expect((await readdir(dir)).filter((f) => f.startsWith('no-weights'))).toEqual([]);
    expect(await childProcesses()).toEqual([]);
  });

  describe('two faces', () => {
    const frames = 60;
    let clip: string;
    let sources: RgbFrame[];

    beforeAll(async () => {
      clip = await twoFaceClip(dir, frames);
      sources = await sourceFrames(clip, await probe(clip));
    });

    /** Changed pixels per side of the clip over all frames. */
    async function changes(
      file: string,
    ): Promise<{ left: number; right: number; framesRight: number; framesLeft: number }> {
      const out = await outputFrames(file, TWO_FACES.width, TWO_FACES.height);
      expect(out).toHaveLength(frames);
      const total = { left: 0, right: 0, framesRight: 0, framesLeft: 0 };
      out.forEach((frame, i) => {
        const changed = changedPixels(sources[i] as RgbFrame, frame);
        const left = changed.filter((p) => p.x < TWO_FACES.split).length;
        total.left += left;
        total.right += changed.length - left;
        if (changed.length - left > 100) total.framesRight += 1;
        if (left > 100) total.framesLeft += 1;
      });
      return total;
    }

    it("with active_speaker drives only the face whose mouth follows the video's speech", async () => {
      const outcome = await lipsyncFile(await request(clip, 'speaker.mp4', { activeSpeaker: true }), deps);
      expect(outcome.faces).toMatchObject({ tracks: 2, method: 'active-speaker' });
      expect(outcome.faces.driven).toHaveLength(1);
      const seen = await changes(outcome.outputPath);
      expect(seen.left).toBe(0);
      expect(seen.framesRight).toBeGreaterThanOrEqual(frames - 2);
    });

    it('without active_speaker drives the more prominent (larger) face only', async () => {
      const outcome = await lipsyncFile(await request(clip, 'prominent.mp4'), deps);
      expect(outcome.faces).toMatchObject({ tracks: 2, method: 'most-prominent' });
      const seen = await changes(outcome.outputPath);
      expect(seen.right).toBe(0);
      expect(seen.framesLeft).toBeGreaterThanOrEqual(frames - 2);
    });
  });
});
