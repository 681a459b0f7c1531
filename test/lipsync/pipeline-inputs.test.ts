/**
 * lipsyncFile on other inputs: GIF and WebM videos, a video without a face, two faces with and
 * without active_speaker, and the model that is not installed.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache } from '../../src/inference/index.js';
import { ProcessingError } from '../../src/errors.js';
import {
  lipsyncFile,
  type LipsyncRequest,
  type RgbFrame,
  releaseLipsyncThreads,
  parseLipsyncModelMapping,
} from '../../src/lipsync/index.js';
import { allowedAudioSeconds, allowedFrames, resolveFfmpeg, runProcess, type MediaInfo } from '../../src/media/index.js';
import { fileFacts, pictureOf } from '../../bench/video-facts.js';
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

  it.each(['gif', 'webm'] as const)('lip-syncs a %s video: its frames, size and rate, pixels away from the mouth untouched', async (format) => {
    const frames = 30;
    const clip = await encodeClip(path.join(dir, `face.${format}`), await faceFrames(frames), { width: SIDE, height: SIDE }, format, {
      ...(format === 'webm' ? { audio: speech.file } : {}),
    });
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
  });

  it('lets frames without a face pass untouched, and sends a part-filled batch when only faceless frames follow', async () => {
    // 18 frames with the face (batches of 4: four full, one of 2), then 52 without: more than the
    // queue holds (3 batches + 4), so the last batch must go before it is full.
    const grey = Buffer.alloc(SIDE * SIDE * 3, 0x80);
    const clip = await encodeClip(path.join(dir, 'face-leaves.mp4'), [...(await faceFrames(18)), ...Array.from({ length: 52 }, () => grey)], { width: SIDE, height: SIDE }, 'mp4');
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
    const clip = await encodeClip(path.join(dir, 'odd.webm'), await faceFrames(20, { side: 161 }), { width: 161, height: 161 }, 'webm');
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
      for (let c = 0; c < 3; c += 1) diff = Math.max(diff, Math.abs((frame.data[3 * (y * 161 + 160) + c] as number) - (source.data[3 * (y * 161 + 160) + c] as number)));
    }
    expect(diff).toBeLessThan(40);
  });

  it('tone-maps an HLG 10-bit source to 8-bit SDR tagged BT.709 throughout (faces are composited in 8 bits), and still finds the face; its title kept, its location removed', async () => {
    const webm = await encodeClip(path.join(dir, 'hlg-source.webm'), await faceFrames(12), { width: SIDE, height: SIDE }, 'webm');
    const clip = path.join(dir, 'hlg.mp4');
    await runProcess(resolveFfmpeg(), [
      '-v', 'error', '-y', '-i', webm, '-vf', 'format=yuv420p10le', '-c:v', 'libx265', '-preset', 'ultrafast',
      '-x265-params', 'log-level=error:colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc',
      '-color_primaries', 'bt2020', '-color_trc', 'arib-std-b67', '-colorspace', 'bt2020nc',
      '-metadata', 'title=Interview', '-metadata', 'location=+48.8584+002.2945/', clip,
    ]);
    const outcome = await lipsyncFile(await request(clip, 'hlg-out.mp4', { lossless: false }), deps);
    expect(outcome.drivenFrames).toBe(12);
    const facts = await fileFacts(outcome.outputPath);
    // The source's title kept, where it was shot removed.
    expect(facts.tags['title']).toBe('Interview');
    expect(Object.keys(facts.tags).filter((k) => /location/i.test(k))).toEqual([]);
    const video = pictureOf(facts);
    expect(video).toMatchObject({ codec_name: 'h264', pix_fmt: 'yuv420p', color_primaries: 'bt709', color_transfer: 'bt709', color_space: 'bt709' });
  });

  it('refuses, before decoding anything, an audio that would make the output longer than 240 s', async () => {
    const clip = await patternClip(path.join(dir, 'short-video.mp4'), 1);
    const req = await request(clip, 'too-long.mp4', { syncMode: 'loop', audioInfo: { ...speech.info, durationSeconds: 300 } });
    await expect(lipsyncFile(req, deps)).rejects.toMatchObject({ code: 'INPUT_TOO_LARGE', message: expect.stringContaining('at most 240 s') });
    // cut_off follows the shorter input: the same audio is fine there (it fails later, on the missing face).
    await expect(lipsyncFile({ ...req, syncMode: 'cut_off' }, deps)).rejects.toMatchObject({ name: 'ProcessingError', message: expect.stringMatching(/no face/) });
  });

  describe('the backstop: inputs that changed after their quote', () => {
    it('a video grown after its quote ends the job in set-up, before the face pass or the network', async () => {
      const clip = await encodeClip(path.join(dir, 'grows.mp4'), await faceFrames(10), { width: SIDE, height: SIDE }, 'mp4');
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
      const clip = await encodeClip(path.join(dir, 'loops.mp4'), await faceFrames(10), { width: SIDE, height: SIDE }, 'mp4');
      const voice = await speechClip(path.join(dir, 'grows.wav'), 1);
      const quoted = { file: voice, info: await probe(voice) };
      await speechClip(voice, 3);
      const outcome = await lipsyncFile(await lipsyncRequest(clip, quoted, path.join(dir, 'loop-out.mp4'), { syncMode: 'loop' }), deps);
      expect(outcome.durationSeconds).toBeLessThanOrEqual(allowedAudioSeconds(quoted.info.durationSeconds) + 1 / FPS);
      expect(outcome.durationSeconds).toBeGreaterThanOrEqual(quoted.info.durationSeconds - 1 / FPS);
    });
  });

  it('fails with a processing failure (LIPSYNC_FAILED for the job) when the video shows no face, leaving nothing behind', async () => {
    const clip = await patternClip(path.join(dir, 'pattern.mp4'), 1);
    const attempt = lipsyncFile(await request(clip, 'pattern-out.mp4'), deps);
    await expect(attempt).rejects.toBeInstanceOf(ProcessingError);
    await expect(attempt).rejects.toMatchObject({ name: 'ProcessingError', message: expect.stringMatching(/no face was found in the video \(25 frames searched\)/) });
    expect((await readdir(dir)).filter((f) => f.startsWith('pattern-out') || f.includes('.partial'))).toEqual([]);
    expect(await childProcesses()).toEqual([]);
  });

  it('fails with the install instructions when no real lip-sync weights are installed and the test model is not selected', async () => {
    const clip = await patternClip(path.join(dir, 'unused.mp4'), 1);
    const attempt = lipsyncFile(await request(clip, 'no-weights.mp4'), { sessions });
    await expect(attempt).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringMatching(/^Expected lip-sync weights wav2lip for vendor-lipsync-2 but they are not installed .*install-lipsync-model.* or select the test model explicitly/),
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
    async function changes(file: string): Promise<{ left: number; right: number; framesRight: number; framesLeft: number }> {
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
