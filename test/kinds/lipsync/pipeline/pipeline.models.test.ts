/**
 * What sets the three public models apart, through the whole pipeline: vendor-lipsync-2-pro's
 * super-resolution pass and source bitrate, vendor-lipsync-3's alignment of a tilted face; and
 * cancellation, which must leave no process and no file behind.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache, type SrModelLoader, createSrModelLoader } from '../../../../src/inference/index.js';
import { resolveFfmpeg, runProcess } from '../../../../src/media/index.js';
import {
  lipsyncFile,
  type LipsyncDeps,
  type LipsyncProgress,
  type LipsyncRequest,
  type RgbFrame,
  releaseLipsyncThreads,
  parseLipsyncModelMapping,
} from '../../../../src/kinds/lipsync/pipeline/index.js';
import {
  changedPixels,
  childProcesses,
  encodeClip,
  faceFrames,
  outputFacts,
  outputFrames,
  probe,
  sourceFrames,
  speechClip,
} from './pipeline-fixtures.js';

function luma(f: RgbFrame, x: number, y: number): number {
  const i = 3 * (y * f.width + x);
  return 0.299 * (f.data[i] as number) + 0.587 * (f.data[i + 1] as number) + 0.114 * (f.data[i + 2] as number);
}

/**
 * Orientation in degrees (clockwise on screen) of what the paste darkened: the principal axis of
 * the darkening's second moments. The test model's dark ellipse is twice as wide as it is high, and
 * level in the crop, so this is the angle the crop was turned by.
 */
function darkeningAngle(source: RgbFrame, output: RgbFrame): number {
  const points: [number, number, number][] = [];
  let sw = 0;
  let sx = 0;
  let sy = 0;
  for (let y = 0; y < source.height; y += 1) {
    for (let x = 0; x < source.width; x += 1) {
      const w = luma(source, x, y) - luma(output, x, y);
      if (w <= 10) continue;
      points.push([x, y, w]);
      sw += w;
      sx += w * x;
      sy += w * y;
    }
  }
  const mx = sx / sw;
  const my = sy / sw;
  let cxx = 0;
  let cyy = 0;
  let cxy = 0;
  for (const [x, y, w] of points) {
    cxx += w * (x - mx) ** 2;
    cyy += w * (y - my) ** 2;
    cxy += w * (x - mx) * (y - my);
  }
  return (0.5 * Math.atan2(2 * cxy, cxx - cyy) * 180) / Math.PI;
}

/** Mean squared Laplacian of the luma over a rectangle: fine detail. */
function detail(f: RgbFrame, x0: number, y0: number, x1: number, y1: number): number {
  let sum = 0;
  let n = 0;
  for (let y = y0; y < y1; y += 1) {
    for (let x = x0; x < x1; x += 1) {
      const v = 4 * luma(f, x, y) - luma(f, x - 1, y) - luma(f, x + 1, y) - luma(f, x, y - 1) - luma(f, x, y + 1);
      sum += v * v;
      n += 1;
    }
  }
  return sum / n;
}

describe('lip-sync models and cancellation', () => {
  const sessions = new SessionCache({ thread: false, threads: 1 });
  const srSessions = new SessionCache({ threads: 1 });
  const srCalls: string[] = [];
  const realSr = createSrModelLoader({ sessions: srSessions });
  const loadSrModel: SrModelLoader = (use, factor, name) => {
    srCalls.push(`${use}:${factor}`);
    return realSr(use, factor, name);
  };
  const deps: LipsyncDeps = { sessions, lipsyncModelMapping: parseLipsyncModelMapping('wav2lip-test'), loadSrModel };
  let dir: string;
  let speech: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'lipsync-models-'));
    speech = await speechClip(path.join(dir, 'speech.mp3'));
  });

  afterAll(async () => {
    await releaseLipsyncThreads();
    await sessions.release();
    await srSessions.release();
    await rm(dir, { recursive: true, force: true });
  });

  async function request(
    video: string,
    outputName: string,
    extra: Partial<LipsyncRequest> = {},
  ): Promise<LipsyncRequest> {
    return {
      videoPath: video,
      videoInfo: await probe(video),
      audioPath: speech,
      audioInfo: await probe(speech),
      outputPath: path.join(dir, outputName),
      model: 'vendor-lipsync-2',
      syncMode: 'cut_off',
      activeSpeaker: false,
      ...extra,
    };
  }

  describe('vendor-lipsync-2-pro', () => {
    const side = 320;
    const frames = 20;
    let clip: string;

    beforeAll(async () => {
      clip = await encodeClip(
        path.join(dir, 'large-face.mp4'),
        await faceFrames(frames, { side }),
        { width: side, height: side },
        'mp4',
        {
          videoBitrate: '600k',
        },
      );
    });

    it('runs the x4 super-resolution pass: a mouth with more detail than vendor-lipsync-2 pastes', async () => {
      srCalls.length = 0;
      const plain = await lipsyncFile(await request(clip, 'plain.mp4', { lossless: true }), deps);
      expect(srCalls).toEqual([]);
      expect(plain.srModel).toBeUndefined();
      const pro = await lipsyncFile(
        await request(clip, 'pro.mp4', { lossless: true, model: 'vendor-lipsync-2-pro' }),
        deps,
      );
      expect(srCalls).toEqual(['mouth:4']);
      expect(pro.srModel).toBe('realesrgan-x4fast');
      expect(pro.stats.srMs).toBeGreaterThan(0);
      // Every face here is larger than the network's 96 px, so every one was upscaled.
      expect(pro.stats.srFaces).toBe(frames);
      const a = await outputFrames(plain.outputPath, side, side);
      const b = await outputFrames(pro.outputPath, side, side);
      // The face is ~150 px wide here: vendor-lipsync-2 stretches the 96 px face, -2-pro upscales it.
      let plainDetail = 0;
      let proDetail = 0;
      for (const i of [4, 9, 14]) {
        plainDetail += detail(a[i] as RgbFrame, 110, 160, 170, 200);
        proDetail += detail(b[i] as RgbFrame, 110, 160, 170, 200);
      }
      expect(proDetail).toBeGreaterThan(1.2 * plainDetail);
    });

    it("encodes at the source's bitrate", async () => {
      const info = await probe(clip);
      const source = info.video?.bitRate ?? 0;
      expect(source).toBeGreaterThan(100_000);
      const pro = await lipsyncFile(await request(clip, 'pro-bitrate.mp4', { model: 'vendor-lipsync-2-pro' }), deps);
      expect(pro.encoder).toEqual({ codec: 'libx264', mode: 'bitrate', bitsPerSecond: source });
      const facts = await outputFacts(pro.outputPath);
      expect(facts).toMatchObject({ frames, width: side, height: side });
      expect(Math.abs(facts.videoBitRate / source - 1)).toBeLessThan(0.15);
      // vendor-lipsync-2 encodes at constant quality instead.
      const plain = await lipsyncFile(await request(clip, 'plain-crf.mp4'), deps);
      expect(plain.encoder).toEqual({ codec: 'libx264', mode: 'crf' });
    });

    it("keeps an HLG 10-bit source HDR: super-resolved mouths pasted into 16-bit frames, HEVC Main10 capped at the source's bitrate", async () => {
      // Fewer frames than the 8-bit clip: super-resolution is the slow part, and 8 show the rule.
      const hlgFrames = 8;
      const hlg = path.join(dir, 'large-face-hlg.mp4');
      await runProcess(resolveFfmpeg(), [
        '-v',
        'error',
        '-y',
        '-i',
        clip,
        '-frames:v',
        String(hlgFrames),
        '-vf',
        'format=yuv420p10le',
        '-c:v',
        'libx265',
        '-preset',
        'ultrafast',
        '-b:v',
        '600k',
        '-x265-params',
        'log-level=error:colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc',
        '-color_primaries',
        'bt2020',
        '-color_trc',
        'arib-std-b67',
        '-colorspace',
        'bt2020nc',
        '-tag:v',
        'hvc1',
        hlg,
      ]);
      const source = (await probe(hlg)).video?.bitRate ?? 0;
      expect(source).toBeGreaterThan(100_000);
      const pro = await lipsyncFile(await request(hlg, 'pro-hlg.mp4', { model: 'vendor-lipsync-2-pro' }), deps);
      expect(pro.encoder).toEqual({ codec: 'libx265', mode: 'bitrate', bitsPerSecond: source });
      expect(pro.colour).toEqual({ codec: 'hevc', bits: 10, transfer: 'arib-std-b67', toneMapped: false });
      expect(pro.stats.srFaces).toBe(hlgFrames);
      const facts = await outputFacts(pro.outputPath);
      expect(facts).toMatchObject({ frames: hlgFrames, width: side, height: side });
      // x265's VBV caps the rate; on 8 frames it lands under the cap rather than on it.
      expect(facts.videoBitRate / source).toBeLessThan(1.2);
      expect(facts.videoBitRate / source).toBeGreaterThan(0.3);
    });
  });

  it('vendor-lipsync-3 turns a tilted face upright for the network and back: the generated mouth follows the tilt', async () => {
    const clip = await encodeClip(
      path.join(dir, 'tilted.mp4'),
      await faceFrames(20, { rotate: 20 }),
      { width: 160, height: 160 },
      'mp4',
    );
    const info = await probe(clip);
    const sources = await sourceFrames(clip, info);
    const angles: Record<string, number[]> = {};
    for (const model of ['vendor-lipsync-2', 'vendor-lipsync-3'] as const) {
      const outcome = await lipsyncFile(await request(clip, `tilted-${model}.mp4`, { model, lossless: true }), deps);
      expect(outcome.drivenFrames).toBe(20);
      const out = await outputFrames(outcome.outputPath, 160, 160);
      angles[model] = [5, 10, 15].map((i) => darkeningAngle(sources[i] as RgbFrame, out[i] as RgbFrame));
    }
    // The photo is turned 20° clockwise; without alignment the crop stays level.
    for (const angle of angles['vendor-lipsync-3'] ?? []) expect(Math.abs(angle - 20)).toBeLessThan(8);
    for (const angle of angles['vendor-lipsync-2'] ?? []) expect(Math.abs(angle)).toBeLessThan(6);
  });

  it('vendor-lipsync-3 drives a close-up larger than the frame, where vendor-lipsync-2 finds no face', async () => {
    // The window is smaller than the face: forehead, chin and cheeks run past every edge.
    const clip = await encodeClip(
      path.join(dir, 'close-up.mp4'),
      await faceFrames(20, { window: { left: 185, top: 95, size: 85 } }),
      { width: 160, height: 160 },
      'mp4',
    );
    await expect(lipsyncFile(await request(clip, 'close-up-2.mp4', { lossless: true }), deps)).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringMatching(/no face was found/),
    });
    const outcome = await lipsyncFile(
      await request(clip, 'close-up-3.mp4', { model: 'vendor-lipsync-3', lossless: true }),
      deps,
    );
    expect(outcome.drivenFrames).toBe(20);
    const sources = await sourceFrames(clip, await probe(clip));
    const out = await outputFrames(outcome.outputPath, 160, 160);
    for (const i of [0, 10, 19]) {
      const changed = changedPixels(sources[i] as RgbFrame, out[i] as RgbFrame);
      // The mouth (the crop's lower half) is generated; the eyes stay the source's. The generated half
      // begins 0.37 eye-to-mouth distances below the eyes (docs/lipsync.md): the eyes are at y ~13
      // here and the mouth at ~100, so at y ~45.
      expect(changed.length).toBeGreaterThan(2000);
      expect(changed.filter((p) => p.y < 40)).toEqual([]);
    }
  });

  describe('cancellation', () => {
    let clip: string;

    beforeAll(async () => {
      clip = await encodeClip(
        path.join(dir, 'long-face.mp4'),
        await faceFrames(60),
        { width: 160, height: 160 },
        'mp4',
      );
    });

    it.each(['detecting faces', 'lip-syncing'] as const)(
      'while %s: rejects with the reason at once, no process and no file left',
      async (stage) => {
        const controller = new AbortController();
        const reason = new Error(`time limit while ${stage}`);
        let abortedAt = 0;
        const onProgress = (p: LipsyncProgress): void => {
          if (p.stage === stage && p.done >= 10 && !controller.signal.aborted) {
            abortedAt = performance.now();
            controller.abort(reason);
          }
        };
        const name = `cancelled-${stage.replace(' ', '-')}.mp4`;
        const attempt = lipsyncFile(
          await request(clip, name, { syncMode: 'loop', signal: controller.signal, onProgress, progressIntervalMs: 0 }),
          deps,
        );
        await expect(attempt).rejects.toBe(reason);
        expect(abortedAt).toBeGreaterThan(0);
        expect(performance.now() - abortedAt).toBeLessThan(3000);
        expect(await childProcesses()).toEqual([]);
        expect((await readdir(dir)).filter((f) => f.startsWith('cancelled') || f.includes('.partial'))).toEqual([]);
      },
    );

    it('rejects at once for a signal aborted before the start', async () => {
      const controller = new AbortController();
      controller.abort(new Error('too late'));
      await expect(lipsyncFile(await request(clip, 'never.mp4', { signal: controller.signal }), deps)).rejects.toThrow(
        'too late',
      );
      expect((await readdir(dir)).filter((f) => f.startsWith('never'))).toEqual([]);
    });
  });

  it('leaves only its outputs in the output directory', async () => {
    const files = (await readdir(dir)).sort();
    expect(files.filter((f) => f.startsWith('.') || f.includes('partial'))).toEqual([]);
    expect(files.filter((f) => f.endsWith('.mp4'))).toEqual(
      [
        'close-up-3.mp4',
        'close-up.mp4',
        'large-face.mp4',
        'long-face.mp4',
        'plain-crf.mp4',
        'plain.mp4',
        'large-face-hlg.mp4',
        'pro-bitrate.mp4',
        'pro-hlg.mp4',
        'pro.mp4',
        'tilted-vendor-lipsync-2.mp4',
        'tilted-vendor-lipsync-3.mp4',
        'tilted.mp4',
      ].sort(),
    );
  });
});
