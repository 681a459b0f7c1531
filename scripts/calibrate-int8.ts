/**
 * Calibrates the int8 variant of a Real-ESRGAN network (issue 48): measures the activation ranges
 * of every convolution on crops of the bundled photos and of Megamind frames, then, with
 * --keep-float auto, leaves the most sensitive convolutions in float32 until the variant's lowest
 * PSNR against the float32 graph (on other crops and frames) reaches --target-db, or --max-float
 * convolutions are kept; --equalize scales channels across PReLUs first, --bias-correction takes
 * the int8 graph's mean excess off each bias. Writes models/calibration/<name>-int8.json and
 * models/<name>-int8.json (the manifest `models prepare` makes the file from) and points the float32
 * manifest at it. Choices are made on selection crops; the figures that count are on held-out centre crops.
 *
 *   npm run build && node dist/scripts/calibrate-int8.js realesrgan-x4fast --method mse --equalize 0.5 --keep-float Conv_0,Conv_66 --bias-correction --write
 *
 * The quality gate's figures (models list) are bench/inference/precision-gate.ts's, not this script's.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import ort from 'onnxruntime-node';
import {
  activationQuantization,
  calibratedTensors,
  equalizableConvs,
  equalizeChannels,
  decodeModel,
  defaultModelsDir,
  deliveredPsnr,
  encodeModel,
  ensureModelFile,
  formatManifest,
  getManifest,
  int8CalibrationFile,
  int8Name,
  quantizableConvs,
  sha256Hex,
  toInt8,
  type Int8Calibration,
  type OnnxModel,
  type RgbImage,
  type SuperResolutionManifest,
} from '../src/inference/index.js';
import { PACKAGE_ROOT } from '../src/paths.js';
import { seededRandom } from '../src/seeded-random.js';
import { decodeFrame } from '../bench/common.js';

const PHOTOS = ['astronaut', 'chelsea', 'coffee'].map((name) =>
  path.join(PACKAGE_ROOT, 'test/fixtures/photos', `${name}.png`),
);
const VIDEO = '/usr/share/doc/opencv-doc/examples/data/Megamind.avi';
const CALIBRATION_FRAMES = [0.5, 3.5, 6.5, 9.5];
const EVALUATION_FRAMES = [2, 5, 8];

interface Crop {
  label: string;
  data: Float32Array;
  size: number;
}

/** A square of `size` at (x, y), as the network's NCHW float input (0..255). */
function crop(image: RgbImage, x: number, y: number, size: number): Float32Array {
  const data = new Float32Array(3 * size * size);
  for (let row = 0; row < size; row += 1) {
    for (let col = 0; col < size; col += 1) {
      const from = ((y + row) * image.width + x + col) * 3;
      for (let c = 0; c < 3; c += 1) data[c * size * size + row * size + col] = image.data[from + c] as number;
    }
  }
  return data;
}

/**
 * Random crops for calibration and, drawn after them, for the choices the script makes (which
 * convolutions stay float32), all away from the centre; centre crops, of other frames too, for the
 * figures it reports: the inputs the gate (bench/inference/precision-gate.ts) measures on, which
 * no choice here has seen.
 */
async function inputs(
  size: number,
  perImage: number,
): Promise<{ calibration: Crop[]; selection: Crop[]; evaluation: Crop[] }> {
  // Seeded, so a calibration is repeatable.
  const next = seededRandom(1);
  const calibration: Crop[] = [];
  const selection: Crop[] = [];
  const evaluation: Crop[] = [];
  const centre = (w: number, h: number) => ({ x: Math.floor((w - size) / 2), y: Math.floor((h - size) / 2) });
  for (const photo of PHOTOS) {
    const image = await decodeFrame(photo);
    const c = centre(image.width, image.height);
    evaluation.push({ label: `photo:${path.basename(photo, '.png')}`, data: crop(image, c.x, c.y, size), size });
    for (let got = 0; got < perImage + 2;) {
      const x = Math.floor(next() * (image.width - size + 1));
      const y = Math.floor(next() * (image.height - size + 1));
      if (Math.abs(x - c.x) < size && Math.abs(y - c.y) < size) continue;
      (got < perImage ? calibration : selection).push({
        label: `photo:${path.basename(photo, '.png')}@${x},${y}`,
        data: crop(image, x, y, size),
        size,
      });
      got += 1;
    }
  }
  for (const [seconds, use] of [
    ...CALIBRATION_FRAMES.map((s) => [s, 'calibration'] as const),
    ...EVALUATION_FRAMES.map((s) => [s, 'evaluation'] as const),
  ]) {
    const image = await decodeFrame(VIDEO, seconds);
    if (use === 'evaluation') {
      const c = centre(image.width, image.height);
      evaluation.push({ label: `frame:Megamind@${seconds}s`, data: crop(image, c.x, c.y, size), size });
      continue;
    }
    for (let i = 0; i < perImage + 1; i += 1) {
      const x = Math.floor(next() * (image.width - size + 1));
      const y = Math.floor(next() * (image.height - size + 1));
      (i < perImage ? calibration : selection).push({
        label: `frame:Megamind@${seconds}s@${x},${y}`,
        data: crop(image, x, y, size),
        size,
      });
    }
  }
  return { calibration, selection, evaluation };
}

async function session(bytes: Uint8Array): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(bytes, {
    intraOpNumThreads: 2,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'all',
  });
}

function feed(input: Crop): Record<string, ort.Tensor> {
  return { input: new ort.Tensor('float32', input.data, [1, 3, input.size, input.size]) };
}

/** The float32 graph with the named tensors as extra outputs. */
function exposing(model: OnnxModel, tensors: readonly string[]): OnnxModel {
  const graph = model.graph ?? {};
  return {
    ...model,
    graph: {
      ...graph,
      output: [...(graph.output ?? []), ...tensors.map((name) => ({ name, type: { tensorType: { elemType: 1 } } }))],
    },
  };
}

/** The value at fraction `q` of the sorted values (nearest rank). */
function quantile(sorted: Float32Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))] as number;
}

/** Each tensor's range over the calibration crops: min/max, or the mean over crops of a percentile. */
async function measureRanges(
  model: OnnxModel,
  tensors: readonly string[],
  crops: readonly Crop[],
  method: string,
): Promise<Record<string, [number, number]>> {
  const probe = await session(encodeModel(exposing(model, tensors)));
  const percentile = method.startsWith('percentile') ? Number(method.split(' ')[1]) / 100 : undefined;
  const samples = new Map<string, Float32Array[]>();
  const lows = new Map<string, number[]>();
  const highs = new Map<string, number[]>();
  for (const input of crops) {
    const outputs = await probe.run(feed(input));
    for (const name of tensors) {
      const values = (outputs[name] as ort.Tensor).data as Float32Array;
      if (method === 'mse') samples.set(name, [...(samples.get(name) ?? []), strided(values, 32768)]);
      let low: number;
      let high: number;
      if (percentile === undefined) {
        low = Infinity;
        high = -Infinity;
        for (const v of values) {
          if (v < low) low = v;
          if (v > high) high = v;
        }
      } else {
        // A strided sample of at most 2^18 values keeps a percentile of 70 tensors per crop quick.
        const sorted = strided(values, 262144).sort();
        low = quantile(sorted, 1 - percentile);
        high = quantile(sorted, percentile);
      }
      lows.set(name, [...(lows.get(name) ?? []), low]);
      highs.set(name, [...(highs.get(name) ?? []), high]);
    }
  }
  await probe.release();
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const combine =
    percentile === undefined
      ? (xs: number[], pick: (...v: number[]) => number) => pick(...xs)
      : (xs: number[]) => mean(xs);
  const ranges = Object.fromEntries(
    tensors.map((name) => [
      name,
      [combine(lows.get(name) ?? [0], Math.min), combine(highs.get(name) ?? [0], Math.max)] as [number, number],
    ]),
  );
  if (method !== 'mse') return ranges;
  return Object.fromEntries(
    tensors.map((name) => [name, leastSquaresRange(ranges[name] as [number, number], samples.get(name) ?? [])]),
  );
}

/** Every k-th value, at most `most` of them. */
function strided(values: Float32Array, most: number): Float32Array {
  const stride = Math.max(1, Math.ceil(values.length / most));
  return Float32Array.from({ length: Math.ceil(values.length / stride) }, (_, i) => values[i * stride] as number);
}

/** The range, shrunk by a common factor, whose uint8 quantization has the least squared error on the samples. */
function leastSquaresRange([low, high]: [number, number], samples: readonly Float32Array[]): [number, number] {
  let best: [number, number] = [low, high];
  let bestError = Infinity;
  for (const factor of [1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2]) {
    const { scale, zeroPoint } = activationQuantization(low * factor, high * factor);
    let error = 0;
    for (const sample of samples) {
      for (const v of sample) {
        const q = Math.min(255, Math.max(0, Math.round(v / scale) + zeroPoint));
        error += ((q - zeroPoint) * scale - v) ** 2;
      }
    }
    if (error < bestError) [best, bestError] = [[low * factor, high * factor], error];
  }
  return best;
}

/**
 * Cross-layer equalization factors: per equalizable convolution, each output channel's largest
 * magnitude (mean over the crops of each crop's largest), and s[c] = (largest of all / channel's)^strength,
 * so the quiet channels are raised toward the loudest (strength 1: all the way; 0.5: halfway in log terms,
 * sparing the next convolution's weights, which shrink by the same factor).
 */
async function equalizationFactors(
  model: OnnxModel,
  crops: readonly Crop[],
  strength: number,
): Promise<Record<string, number[]>> {
  const convs = equalizableConvs(model);
  const outputs = new Map(
    convs.map((name) => [name, (model.graph?.node ?? []).find((n) => n.name === name)?.output?.[0] ?? '']),
  );
  const probe = await session(encodeModel(exposing(model, [...outputs.values()])));
  const peaks = new Map<string, Float64Array>();
  for (const input of crops) {
    const result = await probe.run(feed(input));
    for (const tensorName of outputs.values()) {
      const tensor = result[tensorName] as ort.Tensor;
      const [, channels = 1, h = 1, w = 1] = tensor.dims;
      const data = tensor.data as Float32Array;
      const sum = peaks.get(tensorName) ?? new Float64Array(channels);
      for (let c = 0; c < channels; c += 1) {
        let peak = 0;
        for (let i = c * h * w; i < (c + 1) * h * w; i += 1) peak = Math.max(peak, Math.abs(data[i] as number));
        sum[c] = (sum[c] as number) + peak / crops.length;
      }
      peaks.set(tensorName, sum);
    }
  }
  await probe.release();
  return Object.fromEntries(
    convs.map((name) => {
      const peak = peaks.get(outputs.get(name) ?? '') as Float64Array;
      const loudest = Math.max(...peak);
      return [name, Array.from(peak, (p) => Math.fround(p > 0 ? Math.min(64, (loudest / p) ** strength) : 1))];
    }),
  );
}

/** Per-channel means of each named NCHW tensor of a run. */
function channelMeans(
  outputs: ort.InferenceSession.OnnxValueMapType,
  names: readonly string[],
): Map<string, Float64Array> {
  const means = new Map<string, Float64Array>();
  for (const name of names) {
    const tensor = outputs[name] as ort.Tensor;
    const [, channels = 1, h = 1, w = 1] = tensor.dims;
    const data = tensor.data as Float32Array;
    const sums = new Float64Array(channels);
    for (let c = 0; c < channels; c += 1) {
      let sum = 0;
      for (let i = c * h * w; i < (c + 1) * h * w; i += 1) sum += data[i] as number;
      sums[c] = sum / (h * w);
    }
    means.set(name, sums);
  }
  return means;
}

/**
 * Empirical bias correction, one convolution at a time in graph order: with the corrections of
 * the convolutions before it in place, a convolution's output (after its Q/DQ pair) is compared
 * with the float32 graph's on the calibration crops, channel by channel, and the mean excess comes
 * off its bias. In order, because a shift corrected upstream no longer reaches the next layer.
 */
async function correctBiases(
  model: OnnxModel,
  calibration: Int8Calibration,
  crops: readonly Crop[],
): Promise<Record<string, number[]>> {
  const convs = quantizableConvs(model, calibration.keepFloat);
  const outputs = convs.map((c) => c.output?.[0] ?? '');
  const float32 = calibration.equalization === undefined ? model : equalizeChannels(model, calibration.equalization);
  const reference = await session(encodeModel(exposing(float32, outputs)));
  const float32Means: Array<Map<string, Float64Array>> = [];
  for (const input of crops) float32Means.push(channelMeans(await reference.run(feed(input)), outputs));
  await reference.release();
  const correction: Record<string, number[]> = {};
  for (const [k, conv] of convs.entries()) {
    const y = outputs[k] as string;
    const quantized = await session(
      encodeModel(exposing(toInt8(model, { ...calibration, biasCorrection: { ...correction } }), [`${y}.dq`])),
    );
    let excess: Float64Array | undefined;
    for (const [i, input] of crops.entries()) {
      const q = channelMeans(await quantized.run(feed(input)), [`${y}.dq`]).get(`${y}.dq`) as Float64Array;
      const f = float32Means[i]?.get(y) as Float64Array;
      excess ??= new Float64Array(q.length);
      for (let c = 0; c < q.length; c += 1)
        excess[c] = (excess[c] as number) + ((q[c] as number) - (f[c] as number)) / crops.length;
    }
    await quantized.release();
    correction[conv.name ?? ''] = Array.from(excess ?? [], (v) => Math.fround(v));
  }
  return correction;
}

async function outputsOf(bytes: Uint8Array, crops: readonly Crop[]): Promise<Float32Array[]> {
  const s = await session(bytes);
  const out: Float32Array[] = [];
  for (const input of crops) out.push((await s.run(feed(input))).output?.data as Float32Array);
  await s.release();
  return out;
}

async function lowestPsnr(
  model: OnnxModel,
  calibration: Int8Calibration,
  crops: readonly Crop[],
  reference: readonly Float32Array[],
): Promise<number[]> {
  const outputs = await outputsOf(encodeModel(toInt8(model, calibration)), crops);
  return outputs.map((o, i) => deliveredPsnr(o, reference[i] as Float32Array));
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      method: { type: 'string', default: 'percentile 99.999' },
      'keep-float': { type: 'string', default: 'auto' },
      'target-db': { type: 'string', default: '41' },
      'max-float': { type: 'string', default: '12' },
      'bias-correction': { type: 'boolean', default: false },
      equalize: { type: 'string', default: '0' },
      size: { type: 'string' },
      write: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const name = positionals[0];
  if (values.help || name === undefined) {
    console.log(
      'Usage: node dist/scripts/calibrate-int8.js NETWORK [--method minmax|mse|"percentile 99.999"] [--equalize STRENGTH] [--bias-correction] [--keep-float auto|none|A,B] [--target-db 41] [--max-float 12] [--size PX] [--write]',
    );
    return;
  }
  const method = values.method;
  if (method !== 'minmax' && method !== 'mse' && !/^percentile \d+(\.\d+)?$/.test(method))
    throw new Error(`Expected --method minmax, mse or "percentile N" but received ${method}`);
  const correctBias = values['bias-correction'];
  const base = await ensureModelFile(name);
  const fp32Bytes = new Uint8Array(await readFile(base.path));
  const model = decodeModel(fp32Bytes);
  const heavy = base.manifest.task === 'super-resolution' && base.manifest.macsPerInputPixel > 5e6;
  const size = Number(values.size ?? (heavy ? 64 : 128));
  const { calibration: crops, selection, evaluation } = await inputs(size, heavy ? 2 : 3);
  console.error(
    `calibrate: ${name}, ${crops.length} calibration, ${selection.length} selection and ${evaluation.length} held-out crops of ${size}x${size}, ${method}`,
  );

  const strength = Number(values.equalize);
  const equalization = strength > 0 ? await equalizationFactors(model, crops, strength) : undefined;
  // The ranges are those of the graph that gets quantized: the equalized one.
  const measured = equalization === undefined ? model : equalizeChannels(model, equalization);
  const allTensors = calibratedTensors(measured);
  const ranges = await measureRanges(measured, allTensors, crops, method);
  const make = (keepFloat: string[]): Int8Calibration => ({
    schemaVersion: 1,
    of: name,
    ofSha256: base.manifest.sha256,
    method,
    inputs: crops.map((c) => c.label),
    keepFloat,
    ranges: Object.fromEntries(
      calibratedTensors(model, keepFloat)
        .sort()
        .map((t) => [t, ranges[t] as [number, number]]),
    ),
    ...(equalization === undefined ? {} : { equalization }),
  });
  const [selected, heldOut] = [await outputsOf(fp32Bytes, selection), await outputsOf(fp32Bytes, evaluation)];
  const figures = async (calibration: Int8Calibration, what: string): Promise<number> => {
    const [picked, held] = [
      await lowestPsnr(model, calibration, selection, selected),
      await lowestPsnr(model, calibration, evaluation, heldOut),
    ];
    console.error(
      `  ${what}: lowest PSNR ${Math.min(...picked).toFixed(2)} dB on the selection crops; held out: ${Math.min(...held).toFixed(2)} dB (${held.map((f) => f.toFixed(1)).join(', ')})`,
    );
    return Math.min(...picked);
  };
  const report = async (keepFloat: string[]) => figures(make(keepFloat), `${keepFloat.length} convolutions in float32`);

  const convs = quantizableConvs(model).map((n) => n.name ?? '');
  let keepFloat: string[] = [];
  if (values['keep-float'] === 'auto') {
    // Sensitivity: the lowest PSNR with one convolution in int8 and every other in float32.
    const sensitivity: Array<[string, number]> = [];
    for (const conv of convs) {
      const figure = Math.min(...(await lowestPsnr(model, make(convs.filter((c) => c !== conv)), selection, selected)));
      sensitivity.push([conv, figure]);
    }
    sensitivity.sort((a, b) => a[1] - b[1]);
    console.error(
      `  most sensitive: ${sensitivity
        .slice(0, 8)
        .map(([c, f]) => `${c} ${f.toFixed(1)} dB`)
        .join(', ')}`,
    );
    const target = Number(values['target-db']);
    let lowest = await report(keepFloat);
    for (const [conv] of sensitivity) {
      if (lowest >= target || keepFloat.length >= Number(values['max-float'])) break;
      keepFloat = [...keepFloat, conv];
      lowest = await report(keepFloat);
    }
  } else if (values['keep-float'] !== 'none') {
    keepFloat = values['keep-float'].split(',').filter((c) => c !== '');
    await report(keepFloat);
  } else {
    await report(keepFloat);
  }

  let calibration = make(keepFloat.sort());
  if (correctBias) {
    calibration = { ...calibration, biasCorrection: await correctBiases(model, calibration, crops) };
    await figures(calibration, 'with bias correction');
  }
  const calibrationText = `${JSON.stringify(calibration, null, 2)}\n`;
  const variantBytes = encodeModel(toInt8(model, calibration));
  console.error(
    `calibrate: ${int8Name(name)} ${variantBytes.byteLength} bytes, sha256 ${sha256Hex(variantBytes)}, ${keepFloat.length} of ${convs.length} convolutions in float32${keepFloat.length > 0 ? ` (${keepFloat.join(', ')})` : ''}`,
  );
  if (!values.write) return;
  const modelsDir = defaultModelsDir();
  const fp32Manifest = (await getManifest(name)) as SuperResolutionManifest;
  const calibrationFile = int8CalibrationFile(name);
  await writeFile(path.join(modelsDir, calibrationFile), calibrationText);
  const { halfPrecision: _half, int8: _int8, converter: _converter, gate: _gate, ...rest } = fp32Manifest;
  const variant: SuperResolutionManifest = {
    ...rest,
    name: int8Name(name),
    description: `${fp32Manifest.description}; int8 weights and activations (QDQ, ${keepFloat.length} of ${convs.length} convolutions kept in float32), for CPU hosts`,
    file: `${int8Name(name)}.onnx`,
    sha256: sha256Hex(variantBytes),
    bytes: variantBytes.byteLength,
    source: {
      kind: 'int8',
      of: name,
      calibration: { file: calibrationFile, sha256: sha256Hex(new TextEncoder().encode(calibrationText)) },
    },
    // Quantization turns the tiny differences a shorter overlap leaves at a tile's edge into whole
    // steps (x4fast: 8 levels at overlap 24, 0 at its radius of 34): overlap the whole receptive
    // field where the tile leaves room for it.
    tile: {
      ...rest.tile,
      overlap:
        2 * rest.receptiveFieldRadius + 16 < rest.tile.size
          ? Math.max(rest.tile.overlap, rest.receptiveFieldRadius)
          : rest.tile.overlap,
    },
  };
  await writeFile(path.join(modelsDir, `${variant.name}.json`), formatManifest(variant));
  // A file made from an older calibration would fail its new checksum: `models prepare` makes it again.
  await rm(path.join(modelsDir, variant.file), { force: true });
  await writeFile(path.join(modelsDir, `${name}.json`), formatManifest({ ...fp32Manifest, int8: variant.name }));
  console.error(`calibrate: wrote ${calibrationFile}, ${variant.name}.json and the int8 field of ${name}.json`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exitCode = 1;
});
