/**
 * The `musetalk-test` graphs (src/kinds/lipsync/pipeline/musetalk/test-networks.ts): the real interface, checked
 * through the same contract check as an operator's export; the same bytes every build; and, run
 * end to end on a real face crop and real speech with ONNX Runtime, a mouth that darkens with the
 * speech and an upper face that stays as it was.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import {
  buildMuseTalkTestNetworks,
  checkMuseTalkGraph,
  contractProblems,
  MUSETALK_CONTRACTS,
  MUSETALK_GRAPHS,
  museTalkAudioWindow,
  museTalkDecodedImage,
  museTalkImageTensor,
  positionalEncodingTable,
  whisperActivePositions,
  whisperLogMel,
  MUSETALK_TEST_SIZE,
  type MuseTalkGraph,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';
import { readWav16 } from '../pipeline-fixtures.js';

const ROOT = fileURLToPath(new URL('../../../../../', import.meta.url));
const FIXTURES = path.join(ROOT, 'test/kinds/lipsync/pipeline/fixtures');
const networks = buildMuseTalkTestNetworks();

function session(
  graph: MuseTalkGraph,
  from: Record<MuseTalkGraph, Uint8Array> = networks,
): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(from[graph], { logSeverityLevel: 3, intraOpNumThreads: 1 });
}

async function run(
  graph: MuseTalkGraph,
  feeds: Record<string, [Float32Array, number[]]>,
  from: Record<MuseTalkGraph, Uint8Array> = networks,
): Promise<Float32Array> {
  const s = await session(graph, from);
  try {
    const input: Record<string, ort.Tensor> = {};
    for (const [name, [data, dims]] of Object.entries(feeds)) input[name] = new ort.Tensor('float32', data, dims);
    const out = await s.run(input);
    const name = MUSETALK_CONTRACTS[graph].outputs[0]!.name;
    const tensor = out[name]!;
    const want = MUSETALK_CONTRACTS[graph].outputs[0]!.shape.map((d) => (d === 'B' ? tensor.dims[0] : d));
    expect(tensor.dims).toEqual(want);
    return tensor.data as Float32Array;
  } finally {
    await s.release();
  }
}

describe('musetalk-test networks', () => {
  it.each(MUSETALK_GRAPHS)('%s has the real graph interface', async (graph) => {
    const s = await session(graph);
    try {
      expect(() => checkMuseTalkGraph(s, graph)).not.toThrow();
    } finally {
      await s.release();
    }
  });

  it('the contract check names what is wrong', () => {
    const problems = contractProblems(
      MUSETALK_CONTRACTS.unet,
      [{ name: 'sample', type: 'float16', shape: ['batch', 8, 32, 32] }],
      [{ name: 'out', type: 'float32', shape: ['batch', 4, 32, 32] }],
    );
    expect(problems).toEqual([
      'unet: input sample is float16, expected float32',
      'unet: no input named encoder_hidden_states (it has sample)',
      'unet: no output named latents (it has out)',
      'unet: unexpected outputs out',
    ]);
  });

  it('builds the same bytes every time, and other bytes at another size', () => {
    const again = buildMuseTalkTestNetworks();
    for (const graph of MUSETALK_GRAPHS)
      expect(createHash('sha256').update(again[graph]).digest('hex')).toBe(
        createHash('sha256').update(networks[graph]).digest('hex'),
      );
    const bigger = buildMuseTalkTestNetworks({ ...MUSETALK_TEST_SIZE, channels: [8, 16, 16] });
    expect(bigger.unet.byteLength).toBeGreaterThan(networks.unet.byteLength);
    expect(() => buildMuseTalkTestNetworks({ ...MUSETALK_TEST_SIZE, channels: [7] })).toThrow(
      /multiple of the 2 heads/,
    );
  });

  it('the VAE and the encoder carry cost trunks that reach their outputs at about 1/1000 of a value', async () => {
    // Other trunk widths, the same mapping: what differs between the two builds' outputs is the trunks'.
    const other = buildMuseTalkTestNetworks({
      ...MUSETALK_TEST_SIZE,
      vae: { channels: [8, 8], blocks: 1 },
      whisper: { width: 16, heads: 4, mlp: 32 },
    });
    expect(other.unet).toEqual(networks.unet);
    // Smooth planes (the mapping averages 8 x 8 pixels), a different phase per plane.
    const pattern = (count: number, side: number, scale: number): Float32Array =>
      Float32Array.from({ length: count }, (_, i) => {
        const plane = Math.floor(i / (side * side));
        return scale * Math.sin(((i % side) / side) * 5 + plane) * Math.cos(((Math.floor(i / side) % side) / side) * 3);
      });
    const speech = readWav16(path.join(FIXTURES, 'speech-16k.wav'));
    const cases: [MuseTalkGraph, Record<string, [Float32Array, number[]]>][] = [
      ['vae_encoder', { image: [pattern(2 * 3 * 256 * 256, 256, 0.9), [2, 3, 256, 256]] }],
      ['vae_decoder', { latents: [pattern(2 * 4 * 32 * 32, 32, 0.15), [2, 4, 32, 32]] }],
      ['whisper_encoder', { input_features: [whisperLogMel(speech).data, [1, 80, 3000]] }],
    ];
    for (const [graph, feeds] of cases) {
      const a = await run(graph, feeds);
      const b = await run(graph, feeds, other);
      let range = 0;
      let diff = 0;
      a.forEach((v, i) => {
        range = Math.max(range, Math.abs(v));
        diff = Math.max(diff, Math.abs(v - b[i]!));
      });
      expect(range, graph).toBeGreaterThan(0.1);
      expect(diff, graph).toBeGreaterThan(range * 1e-5);
      expect(diff, graph).toBeLessThan(range * 1e-2);
    }
  });

  it('adds the reference positional table', async () => {
    const zeros = new Float32Array(2 * 50 * 384);
    const out = await run('positional_encoding', { audio_features: [zeros, [2, 50, 384]] });
    const table = positionalEncodingTable();
    expect(out.subarray(50 * 384)).toEqual(table);
    expect(table[0]).toBe(0); // sin(0)
    expect(table[1]).toBe(1); // cos(0)
    expect(table[384 + 0]).toBeCloseTo(Math.sin(1), 6);
  });

  it('darkens the mouth with the speech and leaves the upper face as it was', async () => {
    // A real face: the astronaut photo's face, cut square and resized to 256.
    const face = new Uint8Array(
      await sharp(path.join(ROOT, 'test/fixtures/photos/astronaut.png'))
        .extract({ left: 150, top: 40, width: 180, height: 210 })
        .resize(256, 256, { fit: 'fill' })
        .removeAlpha()
        .raw()
        .toBuffer(),
    );
    const images = new Float32Array(2 * 3 * 256 * 256);
    museTalkImageTensor(face, 256, true, images, 0);
    museTalkImageTensor(face, 256, false, images, 3 * 256 * 256);
    const latents = await run('vae_encoder', { image: [images, [2, 3, 256, 256]] });
    const sample = new Float32Array(2 * 8 * 32 * 32);
    // Frame 0 and 1 use the same face; the audio differs (silence, speech).
    for (const b of [0, 1]) {
      sample.set(latents.subarray(0, 4 * 1024), b * 8 * 1024);
      sample.set(latents.subarray(4 * 1024, 8 * 1024), b * 8 * 1024 + 4 * 1024);
    }
    const speech = readWav16(path.join(FIXTURES, 'speech-16k.wav'));
    const mels = new Float32Array(2 * 80 * 3000);
    mels.set(whisperLogMel(new Float32Array(speech.length)).data, 0);
    mels.set(whisperLogMel(speech).data, 80 * 3000);
    const hidden = await run('whisper_encoder', { input_features: [mels, [2, 80, 3000]] });
    const perSegment = 1500 * 5 * 384;
    const windows = new Float32Array(2 * 50 * 384);
    const active = whisperActivePositions(speech.length);
    const fps = { num: 25, den: 1 };
    // Frame 30 (1.2 s) is in the middle of the sentence.
    museTalkAudioWindow(
      { data: hidden.subarray(0, perSegment), positions: 1500, layers: 5, width: 384 },
      active,
      30,
      fps,
      windows,
      0,
    );
    museTalkAudioWindow(
      { data: hidden.subarray(perSegment), positions: 1500, layers: 5, width: 384 },
      active,
      30,
      fps,
      windows,
      50 * 384,
    );
    const audio = await run('positional_encoding', { audio_features: [windows, [2, 50, 384]] });
    const predicted = await run('unet', {
      sample: [sample, [2, 8, 32, 32]],
      encoder_hidden_states: [audio, [2, 50, 384]],
    });
    const decoded = await run('vae_decoder', { latents: [predicted, [2, 4, 32, 32]] });
    const silent = museTalkDecodedImage(decoded, 256, 0);
    const talking = museTalkDecodedImage(decoded, 256, 3 * 256 * 256);
    const mean = (img: Uint8Array, x0: number, y0: number, x1: number, y1: number): number => {
      let sum = 0;
      for (let y = y0; y < y1; y++)
        for (let x = x0; x < x1; x++)
          sum += img[3 * (y * 256 + x)]! + img[3 * (y * 256 + x) + 1]! + img[3 * (y * 256 + x) + 2]!;
      return sum / (3 * (x1 - x0) * (y1 - y0));
    };
    const mouth = [104, 176, 152, 200] as const;
    const mouthCentre = [116, 182, 140, 194] as const;
    const eyes = [40, 60, 216, 110] as const;
    // Speech darkens the mouth visibly; silence hardly touches it; the upper face is the same in both.
    expect(mean(silent, ...mouth) - mean(talking, ...mouth)).toBeGreaterThan(20);
    expect(mean(talking, ...mouthCentre)).toBeLessThan(0.4 * mean(silent, ...mouthCentre));
    expect(Math.abs(mean(silent, ...mouth) - mean(face, ...mouth))).toBeLessThan(8);
    expect(Math.abs(mean(silent, ...eyes) - mean(talking, ...eyes))).toBeLessThan(1);
    // The decoded picture is the source, blurred by the 8 x 8 latent grid: close on the upper face.
    expect(Math.abs(mean(silent, ...eyes) - mean(face, ...eyes))).toBeLessThan(3);
  });
});
