/**
 * Sized builds of the musetalk-test generator (test-networks.ts options, as
 * scripts/make-test-musetalk-model.ts --name makes them for the device check): weights outside the
 * graph (ONNX external data) and float16, written by writeMuseTalkGraphFiles with the script's
 * manifest, then loaded the worker's way (loadMuseTalk: both files' sha256, sessions on threads of
 * their own, the contract check) and run on real faces and speech: the test size, and a small size
 * with the real depth of the VAE (its four levels, down to 256 pixels) and of the Whisper encoder.
 * And the real size's structure, every graph's parameters, without making its 914 M weights.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sizedMuseTalkManifest } from '../../../../../scripts/make-test-musetalk-model.js';
import { SessionCache } from '../../../../../src/inference/index.js';
import { loadBlazeFace, type FaceBox, type RgbFrame } from '../../../../../src/kinds/lipsync/pipeline/index.js';
import {
  buildMuseTalkNetworks,
  buildMuseTalkTestNetworks,
  formatMuseTalkManifest,
  loadMuseTalk,
  MUSETALK_EXTERNAL_DATA_ABOVE,
  MUSETALK_GRAPHS,
  MUSETALK_REAL_SIZE,
  MUSETALK_TEST_SIZE,
  museTalkGraphDir,
  museTalkManifestPath,
  releaseMuseTalkThreads,
  writeMuseTalkGraphFiles,
  type MuseTalkBuildOptions,
  type MuseTalkManifest,
  type MuseTalkNetworkSize,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';
import { faceFrames, FPS, SPEECH } from '../pipeline-fixtures.js';
import { readWav16 } from '../pipeline-fixtures.js';

const FRAMES = 8;
const SIDE = 256;
const fps = { num: FPS, den: 1 };

let dir: string;
let sessions: SessionCache;
let frames: RgbFrame[];
let faces: FaceBox[];
let samples: Float32Array;

/** What the script's --name build does: the graphs, then the manifest naming the options. */
async function make(name: string, options: MuseTalkBuildOptions): Promise<MuseTalkManifest> {
  const graphs = await writeMuseTalkGraphFiles(museTalkGraphDir(dir, name), buildMuseTalkNetworks(options));
  const manifest = sizedMuseTalkManifest(name, graphs, options);
  mkdirSync(path.dirname(museTalkManifestPath(dir, name)), { recursive: true });
  writeFileSync(museTalkManifestPath(dir, name), formatMuseTalkManifest(manifest));
  return manifest;
}

/** The frames with MuseTalk's mouths blended in by network `name`, loaded as the worker loads it. */
async function render(name: string): Promise<RgbFrame[]> {
  const engine = await loadMuseTalk(name, { sessions, modelsDir: dir, batch: 4 });
  const out = frames.map((f) => ({ ...f, data: f.data.slice() }));
  const stats = await engine.render(
    out.map((frame, i) => ({ frame, face: faces[i]!, audioFrame: 20 + i })),
    await engine.audio(samples),
    fps,
  );
  expect(stats.rendered).toBe(FRAMES);
  return out;
}

function differences(a: RgbFrame[], b: RgbFrame[]): { max: number; mean: number; changed: number } {
  let max = 0;
  let sum = 0;
  let changed = 0;
  let count = 0;
  a.forEach((frame, i) => {
    frame.data.forEach((v, k) => {
      const d = Math.abs(v - b[i]!.data[k]!);
      max = Math.max(max, d);
      sum += d;
      if (d > 0) changed++;
      count++;
    });
  });
  return { max, mean: sum / count, changed };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'musetalk-sized-'));
  sessions = new SessionCache({ thread: false, threads: 1 });
  frames = (await faceFrames(FRAMES, { side: SIDE })).map((raw) => ({
    data: new Uint8Array(raw),
    width: SIDE,
    height: SIDE,
  }));
  const detector = await loadBlazeFace('blazeface-back-256', { sessions, minScore: 0.5 });
  faces = [];
  for (const frame of frames) faces.push((await detector.detect(frame))[0]!);
  samples = readWav16(SPEECH);
}, 120_000);

afterAll(async () => {
  await releaseMuseTalkThreads();
  await sessions.release();
  rmSync(dir, { recursive: true, force: true });
});

describe('sized musetalk-test builds', () => {
  it('with the weights outside the graphs: the same pixels as with them inside, and the manifest covers the data files', async () => {
    const inside = await make('inside', {});
    const outside = await make('outside', { externalDataAbove: 0 });
    for (const g of MUSETALK_GRAPHS) {
      expect(inside.graphs[g].externalData).toBeUndefined();
      expect(outside.graphs[g].externalData?.file).toBe(`${g}.onnx.data`);
      expect(outside.graphs[g].bytes).toBeLessThan(inside.graphs[g].bytes);
    }
    const a = await render('inside');
    const b = await render('outside');
    expect(differences(a, b).changed).toBe(0);
    // And the mouths were really drawn: the frames are not the source.
    expect(differences(a, frames).changed).toBeGreaterThan(1000);

    // A changed byte in the data file is refused, naming it; a missing one is made again from the manifest's options.
    const data = path.join(museTalkGraphDir(dir, 'outside'), 'unet.onnx.data');
    const bytes = readFileSync(data);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 1;
    writeFileSync(data, bytes);
    await expect(loadMuseTalk('outside', { sessions, modelsDir: dir })).rejects.toThrow(
      /outside's unet.onnx.data to have sha256 .* refusing to load it/,
    );
    rmSync(data);
    const again = await render('outside');
    expect(differences(a, again).changed).toBe(0);
  }, 240_000);

  it('in float16: half the weight bytes, the float32 interface, and the same picture within a level or two', async () => {
    const fp32 = await make('fp32', { externalDataAbove: 0 });
    const fp16 = await make('fp16', { precision: 'fp16', externalDataAbove: 0 });
    const weights = (m: MuseTalkManifest): number => m.graphs.unet.externalData!.bytes;
    expect(weights(fp16)).toBeLessThan(0.6 * weights(fp32));
    expect(weights(fp16)).toBeGreaterThan(0.4 * weights(fp32));
    expect(fp16.source).toMatchObject({ kind: 'generated', options: { precision: 'fp16' } });
    // loadMuseTalk holds every graph to its contract (float32 in and out) before it runs.
    const a = await render('fp32');
    const b = await render('fp16');
    const diff = differences(a, b);
    expect(diff.max).toBeLessThanOrEqual(8);
    expect(diff.mean).toBeLessThan(0.5);
    expect(differences(b, frames).changed).toBeGreaterThan(1000);
  }, 240_000);

  it('at a small size with the real depth of the VAE and the encoder: made again from its manifest, and the test picture', async () => {
    // Four VAE levels: the trunks run at 256 x 256 as the real ones do, at a width the CPU runs in seconds.
    const size: MuseTalkNetworkSize = {
      ...MUSETALK_TEST_SIZE,
      vae: { channels: [4, 8, 8, 16], blocks: 2 },
      whisper: { width: 32, heads: 2, mlp: 64 },
    };
    const small = await make('small', { size });
    const test = await make('test', {});
    for (const g of ['whisper_encoder', 'vae_encoder', 'vae_decoder'] as const)
      expect(small.graphs[g].bytes).toBeGreaterThan(test.graphs[g].bytes);
    expect(small.graphs.unet.sha256).toBe(test.graphs.unet.sha256);
    // The manifest names every part of the size, so the worker makes the same bytes again.
    expect(small.source).toMatchObject({ kind: 'generated', options: { size } });
    rmSync(museTalkGraphDir(dir, 'small'), { recursive: true });
    const a = await render('small');
    for (const g of MUSETALK_GRAPHS)
      expect(readFileSync(path.join(museTalkGraphDir(dir, 'small'), `${g}.onnx`)).byteLength).toBe(
        small.graphs[g].bytes,
      );
    // The trunks reach the outputs at about 1/1000 of a value: a few levels at most, the mouth the test's.
    const b = await render('test');
    const diff = differences(a, b);
    expect(diff.changed).toBeGreaterThan(0);
    expect(diff.max).toBeLessThanOrEqual(2);
    expect(diff.mean).toBeLessThan(0.05);
    expect(differences(a, frames).changed).toBeGreaterThan(1000);
  }, 240_000);

  it('at the real size: every graph of the real layout and parameters, only the UNet outside by default, none made yet', () => {
    // Targets: diffusers' UNet2DConditionModel as MuseTalk has it less its time embedding, sd-vae-ft-mse's
    // encoder (with its quant conv) and decoder (with its post-quant conv), whisper-tiny's encoder.
    const targets = {
      unet: 822e6,
      vae_encoder: 34.16e6,
      vae_decoder: 49.49e6,
      whisper_encoder: 8.21e6,
    } as const;
    for (const precision of ['fp32', 'fp16'] as const) {
      // Every weight outside: the graphs' structure alone, no weight is made until its file is written.
      const built = buildMuseTalkNetworks({ size: MUSETALK_REAL_SIZE, precision, externalDataAbove: 0 });
      const width = precision === 'fp16' ? 2 : 4;
      for (const [graph, target] of Object.entries(targets) as [keyof typeof targets, number][]) {
        const { parameters, externalData, model } = built[graph];
        expect(parameters, graph).toBeGreaterThan(0.97 * target);
        expect(parameters, graph).toBeLessThan(1.03 * target);
        expect(externalData?.bytes, graph).toBeGreaterThanOrEqual(width * parameters - 1e6);
        expect(externalData?.bytes, graph).toBeLessThan(width * parameters + 4e6);
        // The graph alone: its nodes and small constants, far from protobuf's 2 GB.
        expect(model.byteLength, graph).toBeLessThan(1e6);
        // By default only a graph over MUSETALK_EXTERNAL_DATA_ABOVE keeps its weights outside: the UNet.
        expect(externalData!.bytes > MUSETALK_EXTERNAL_DATA_ABOVE, graph).toBe(graph === 'unet');
      }
    }
    // The UNet's weights need external data, and the test networks' bytes hold them inside.
    expect(() =>
      buildMuseTalkTestNetworks({
        ...MUSETALK_REAL_SIZE,
        vae: MUSETALK_TEST_SIZE.vae,
        whisper: MUSETALK_TEST_SIZE.whisper,
      }),
    ).toThrow(/unet's weights to fit in its graph but they take 3289211904 bytes.*external data/);
  });

  it('refuses a size it cannot lay out, naming the part', () => {
    const build = (size: Partial<MuseTalkNetworkSize>): unknown =>
      buildMuseTalkNetworks({ size: { ...MUSETALK_TEST_SIZE, ...size }, externalDataAbove: 0 });
    expect(() => build({ vae: { channels: [4, 8, 8, 16, 16], blocks: 1 } })).toThrow(
      /1 to 4 VAE levels but received 5/,
    );
    expect(() => build({ vae: { channels: [4, 0], blocks: 1 } })).toThrow(/VAE level's channels .* received 0/);
    expect(() => build({ vae: { channels: [4], blocks: 0 } })).toThrow(/VAE's blocks .* received 0/);
    expect(() => build({ whisper: { width: 12, heads: 8, mlp: 16 } })).toThrow(
      /Whisper width .* 8 heads.* received 12/,
    );
    expect(() => build({ whisper: { width: 2, heads: 1, mlp: 16 } })).toThrow(
      /Whisper width .* 4 or more, but received 2/,
    );
    expect(() => build({ whisper: { width: 8, heads: 2, mlp: 0.5 } })).toThrow(/Whisper feed-forward width .* 0.5/);
  });
});
