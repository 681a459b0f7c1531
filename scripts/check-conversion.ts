/**
 * Checks converted models against the originals: the UpscalerJS TF.js model (with the package's
 * own custom layers, run on TF.js's pure-JS CPU backend) and the ONNX graph (onnxruntime-node)
 * upscale the same crop of a real photo; the script prints the max and mean absolute difference
 * on the 0-255 scale.
 *
 *   npx tsc -p tsconfig.json && node dist/scripts/check-conversion.js [NAME...] [--size 64] [--image PATH]
 *
 * TF.js on the CPU is slow (seconds per 64x64 crop for slim, about a minute for thick): keep crops small.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import * as tf from '@tensorflow/tfjs';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import { DEFAULT_SAMPLE_IMAGE } from '../src/paths.js';
import {
  convertTfjsSource,
  packageRoot,
  parseModelName,
  installedSource,
  UPSCALERJS_VARIANTS,
} from '../src/inference/index.js';

export const DEFAULT_IMAGE = DEFAULT_SAMPLE_IMAGE;

export interface Crop {
  left: number;
  top: number;
  size: number;
}

export interface CheckResult {
  name: string;
  crop: Crop;
  outputSize: number;
  maxAbsDiff: number;
  meanAbsDiff: number;
  tfjsMs: number;
  onnxMs: number;
  sha256: string;
}

/** The part of an UpscalerJS model definition this check uses. */
interface UpscalerDefinition {
  setup?: (tfModule: typeof tf) => void;
  inputRange: [number, number];
  outputRange: [number, number];
}

/** The package's own definition (custom layers, ranges), as UpscalerJS itself would use it. */
function upscalerDefinition(packageName: string, scale: number): UpscalerDefinition {
  const required = createRequire(import.meta.url)(`${packageName}/${scale}x`) as {
    default?: UpscalerDefinition;
  } & UpscalerDefinition;
  return required.default ?? required;
}

export async function loadTfjsModel(
  packageName: string,
  scale: number,
): Promise<{ model: tf.LayersModel; definition: UpscalerDefinition }> {
  const definition = upscalerDefinition(packageName, scale);
  definition.setup?.(tf);
  const { root } = await packageRoot(packageName, import.meta.url);
  const modelJsonPath = path.join(root, `models/x${scale}/model.json`);
  const json = JSON.parse(await readFile(modelJsonPath, 'utf8')) as {
    modelTopology: object;
    weightsManifest: Array<{ paths: string[]; weights: tf.io.WeightsManifestEntry[] }>;
  };
  const buffers: Buffer[] = [];
  for (const group of json.weightsManifest) {
    for (const shard of group.paths) buffers.push(await readFile(path.join(path.dirname(modelJsonPath), shard)));
  }
  const joined = Buffer.concat(buffers);
  const weightData = joined.buffer.slice(joined.byteOffset, joined.byteOffset + joined.byteLength);
  const model = await tf.loadLayersModel(
    tf.io.fromMemory({
      modelTopology: json.modelTopology,
      weightSpecs: json.weightsManifest.flatMap((g) => g.weights),
      weightData,
    }),
  );
  return { model, definition };
}

/** RGB bytes of a square crop, row-major, interleaved. */
export async function readCrop(imagePath: string, crop: Crop): Promise<Uint8Array> {
  const { data, info } = await sharp(imagePath)
    .removeAlpha()
    .extract({ left: crop.left, top: crop.top, width: crop.size, height: crop.size })
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 3) throw new Error(`Expected 3 channels from ${imagePath} but received ${info.channels}`);
  return new Uint8Array(data);
}

export async function checkConversion(
  name: string,
  options: { imagePath?: string; crop?: Crop } = {},
): Promise<CheckResult> {
  const parsed = parseModelName(name);
  if (parsed === undefined) throw new Error(`Expected a model name like esrgan-slim-x4 but received ${name}`);
  const imagePath = options.imagePath ?? DEFAULT_IMAGE;
  // The astronaut's face and suit: edges, skin and flat areas in one small crop.
  const crop = options.crop ?? { left: 160, top: 60, size: 64 };
  const rgb = await readCrop(imagePath, crop);
  const n = crop.size;

  await tf.setBackend('cpu');
  const { model, definition } = await loadTfjsModel(UPSCALERJS_VARIANTS[parsed.variant].package, parsed.scale);
  const inputFactor = definition.inputRange[1] / 255;
  const outputFactor = 255 / definition.outputRange[1];
  const nhwc = Float32Array.from(rgb, (v) => v * inputFactor);
  const tfStart = performance.now();
  const reference = tf.tidy(
    () => (model.predict(tf.tensor4d(nhwc, [1, n, n, 3])) as tf.Tensor).dataSync() as Float32Array,
  );
  const tfjsMs = performance.now() - tfStart;
  model.dispose();

  const converted = await convertTfjsSource(name, await installedSource(parsed.variant, parsed.scale));
  const session = await ort.InferenceSession.create(converted.bytes);
  const nchw = new Float32Array(3 * n * n);
  for (let i = 0; i < n * n; i += 1) {
    for (let c = 0; c < 3; c += 1) nchw[c * n * n + i] = rgb[i * 3 + c] as number;
  }
  const onnxStart = performance.now();
  const result = await session.run({ input: new ort.Tensor('float32', nchw, [1, 3, n, n]) });
  const onnxMs = performance.now() - onnxStart;
  await session.release();
  const output = result['output'];
  const m = n * parsed.scale;
  if (output === undefined || output.dims.join() !== [1, 3, m, m].join()) {
    throw new Error(`Expected ONNX output [1, 3, ${m}, ${m}] but received [${output?.dims.join(', ') ?? ''}]`);
  }
  const data = output.data as Float32Array;
  let max = 0;
  let sum = 0;
  for (let i = 0; i < m * m; i += 1) {
    for (let c = 0; c < 3; c += 1) {
      const diff = Math.abs((reference[i * 3 + c] as number) * outputFactor - (data[c * m * m + i] as number));
      if (!(diff <= max)) max = diff; // NaN makes the result NaN, not silently 0
      sum += diff;
    }
  }
  return {
    name,
    crop,
    outputSize: m,
    maxAbsDiff: max,
    meanAbsDiff: sum / (m * m * 3),
    tfjsMs,
    onnxMs,
    sha256: converted.sha256,
  };
}

const DEFAULT_NAMES = [
  'esrgan-slim-x2',
  'esrgan-slim-x4',
  'esrgan-medium-x2',
  'esrgan-medium-x4',
  'esrgan-thick-x2',
  'esrgan-thick-x4',
];

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { size: { type: 'string', default: '64' }, image: { type: 'string', default: DEFAULT_IMAGE } },
  });
  const size = Number(values.size);
  if (!Number.isInteger(size) || size < 8)
    throw new Error(`Expected integer >= 8 for --size but received ${values.size}`);
  const names = positionals.length > 0 ? positionals : DEFAULT_NAMES;
  console.log(`image ${values.image}, crop ${size}x${size}; differences on the 0-255 scale`);
  for (const name of names) {
    const r = await checkConversion(name, { imagePath: values.image, crop: { left: 160, top: 60, size } });
    console.log(
      `${r.name.padEnd(18)} max ${r.maxAbsDiff.toExponential(2)}  mean ${r.meanAbsDiff.toExponential(2)}  ` +
        `tfjs-cpu ${r.tfjsMs.toFixed(0)} ms  onnx ${r.onnxMs.toFixed(0)} ms  (${r.outputSize}x${r.outputSize} out)`,
    );
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
