/**
 * Side by side with the JavaScript peer a user would pick instead: UpscalerJS 1.0 on TF.js's
 * WebAssembly backend, with the same weights (@upscalerjs/esrgan-*) and the same image, file in,
 * file out, against ours (probeImage + upscaleImageFile, what `media-worker upscale-image` runs).
 *
 * UpscalerJS's Node entry (`upscaler/node`) needs @tensorflow/tfjs-node, whose install downloads a
 * native library from outside the registry. So the Upscaler class is built exactly as that entry
 * builds it (the package's own getUpscaler, loadModel, args and image code from its Node build),
 * with @tensorflow/tfjs on the wasm backend in place of tfjs-node, and a file:// model loader in
 * place of the one tfjs-node registers. Decoding and encoding use sharp for both sides, PNG at the
 * same compression level, so the difference is the network runtime and the pipeline around it.
 *
 * Fairness: TF.js's wasm backend runs one thread in Node (its multi-threaded build needs browser
 * workers: tfjs issue 3830, flag WASM_HAS_MULTITHREAD_SUPPORT is false under Node), so ours is
 * measured with 1 ONNX Runtime thread (same threads) and with its default (all cores, what a user
 * gets). UpscalerJS runs with its defaults (no patchSize: the whole image in one call) unless
 * --patch-size is given; ours with the manifest's tile settings unless --tile is given (a tile as
 * large as the image makes both sides do the same arithmetic). Each side runs once untimed
 * (warm-up excluded for both), then --repeat alternating runs; the tables use each side's fastest
 * run (the least disturbed on a shared machine) and show the ratio of medians too. The two outputs
 * are compared (PSNR of ours against UpscalerJS's) to show both computed the same thing.
 *
 *   media-worker bench upscalerjs --help
 */
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import * as tfWasm from '@tensorflow/tfjs-backend-wasm';
import sharp from 'sharp';
import { SessionCache, createSrModelLoader } from '../../src/inference/index.js';
import { probeImage } from '../../src/media/index.js';
import { DEFAULT_SAMPLE_IMAGE, PACKAGE_ROOT } from '../../src/paths.js';
import { upscaleImageFile } from '../../src/kinds/image-upscale/pipeline/index.js';
import {
  describeMachine,
  formatTable,
  intOption,
  loadRgb,
  machineInfo,
  packageVersion,
  resultsPath,
  shortName,
  splitList,
  srManifests,
  summarise,
  timed,
  type Timing,
  writeResults,
} from '../common.js';
import { lumaBt601, psnr } from '../metrics.js';
import { TABLES } from '../blocks.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const require = createRequire(path.join(PACKAGE_ROOT, 'package.json'));

/** The slice of UpscalerJS's Upscaler this benchmark uses. */
interface Upscaler {
  ready: Promise<void>;
  upscale(
    image: tf.Tensor3D,
    options: { output: 'tensor'; patchSize?: number; padding?: number },
  ): Promise<tf.Tensor3D>;
  dispose(): Promise<void>;
}
type UpscalerClass = new (options: { model: unknown }) => Upscaler;

const cli = benchCli({
  name: 'upscalerjs',
  options: {
    image: { type: 'string', arg: 'PATH', help: 'the photo, centre-cropped to --size', default: DEFAULT_SAMPLE_IMAGE },
    size: { type: 'string', arg: 'PX', help: 'crop side in input pixels', default: '256' },
    'patch-size': { type: 'string', arg: 'PX', help: "UpscalerJS's patchSize (default: the whole image in one call)" },
    padding: { type: 'string', arg: 'PX', help: "UpscalerJS's padding, with --patch-size" },
    results: { type: 'string', arg: 'FILE', help: 'where the results go', default: resultsPath('upscalerjs') },
  },
  common: {
    model: { help: 'ESRGAN networks of @upscalerjs/esrgan-* (default: every one at x2 and x4)' },
    tile: { help: "our tile edge in input pixels (default: each network's manifest)" },
    repeat: { default: '2' },
  },
});
const values = cli.values;

/**
 * UpscalerJS's Upscaler as `upscaler/node` assembles it, with TF.js (wasm) instead of tfjs-node.
 * The package's exports map hides these files, so they are required by absolute path.
 */
function upscalerClass(): UpscalerClass {
  // upscaler/node resolves to <root>/dist/node/upscalerjs/src/node/cjs/index.js.
  const src = path.resolve(path.dirname(require.resolve('upscaler/node')), '..', '..');
  const part = (file: string): Record<string, unknown> => require(path.join(src, file)) as Record<string, unknown>;
  const shared = part('shared/index.js');
  const { getUpscaleOptions } = part('node/args.node.js');
  const { loadModel } = part('node/loadModel.node.js');
  const { getImageAsTensor, tensorAsBase64, checkValidEnvironment } = part('node/image.node.js');
  const getUpscaler = shared.getUpscaler as (deps: Record<string, unknown>) => UpscalerClass;
  return getUpscaler({ tf, getUpscaleOptions, loadModel, getImageAsTensor, tensorAsBase64, checkValidEnvironment });
}

/** Loads `file://` model URLs from disk, as tfjs-node's file handler would. */
function registerFileLoader(): void {
  const router = (url: string | string[]): tf.io.IOHandler | null => {
    if (typeof url !== 'string' || !url.startsWith('file://')) return null;
    const file = fileURLToPath(url);
    return {
      async load(): Promise<tf.io.ModelArtifacts> {
        const json = JSON.parse(await readFile(file, 'utf8')) as tf.io.ModelJSON;
        const specs: tf.io.WeightsManifestEntry[] = [];
        const shards: Buffer[] = [];
        for (const group of json.weightsManifest) {
          specs.push(...group.weights);
          for (const shard of group.paths) shards.push(await readFile(path.join(path.dirname(file), shard)));
        }
        const all = Buffer.concat(shards);
        return {
          modelTopology: json.modelTopology,
          weightSpecs: specs,
          weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength),
          ...(json.format === undefined ? {} : { format: json.format }),
        };
      },
    };
  };
  // The registry passes over routers that answer null (how its own http and indexeddb routers
  // decline a URL), but the typings say a router always returns a handler.
  tf.io.registerLoadRouter(router as Parameters<typeof tf.io.registerLoadRouter>[0]);
}

/** The UpscalerJS model definition for one of our manifests (`esrgan-thick-x4` -> `@upscalerjs/esrgan-thick/4x`). */
function upscalerModel(name: string): unknown {
  const match = /^esrgan-(slim|medium|thick)-x(\d)$/.exec(name);
  if (match === null) throw new Error(`Expected an esrgan-{slim,medium,thick}-xN model name but received ${name}`);
  return require(`@upscalerjs/esrgan-${match[1]}/${match[2]}x`);
}

interface PeerRow {
  model: string;
  scale: number;
  outWidth: number;
  outHeight: number;
  upscalerjs: Timing;
  ours1: Timing;
  ours: Timing;
  /** UpscalerJS time over ours (fastest runs): how many times faster ours is. */
  ratio1: number;
  ratio: number;
  /** The same from the medians. */
  ratio1Median: number;
  ratioMedian: number;
  /** PSNR (dB, Y) of our output against UpscalerJS's: high means both computed the same image. */
  agreementDb: number;
}

async function main(): Promise<void> {
  const target = await docsTarget('upscalerjs', values);
  const size = intOption('size', values.size, 16) ?? 256;
  const reps = intOption('repeat', values.repeat, 1) ?? 2;
  const tile = intOption('tile', values.tile, 16);
  const patchSize = intOption('patch-size', values['patch-size'], 1);
  const padding = intOption('padding', values.padding);
  const manifests = await srManifests([2, 4], values.model === undefined ? undefined : splitList(values.model));

  await tf.setBackend('wasm');
  await tf.ready();
  const wasmThreads = tfWasm.getThreadsCount();
  const simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
  registerFileLoader();
  const Upscaler = upscalerClass();

  const machine = machineInfo();
  const tiling = tile === undefined ? {} : { tile };
  const oneThread = createSrModelLoader({
    sessions: new SessionCache({ executionProviders: ['cpu'], threads: 1 }),
    ...tiling,
  });
  const allThreads = createSrModelLoader({ sessions: new SessionCache({ executionProviders: ['cpu'] }), ...tiling });

  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-upscalerjs-'));
  try {
    const rgb = await loadRgb(values.image, size);
    const input = path.join(dir, 'input.png');
    await sharp(rgb.data, { raw: { width: rgb.width, height: rgb.height, channels: 3 } })
      .png()
      .toFile(input);
    const theirsOut = path.join(dir, 'upscalerjs.png');
    const oursOut = path.join(dir, 'ours.png');

    const versions = `upscaler ${packageVersion('upscaler')}, @tensorflow/tfjs ${packageVersion('@tensorflow/tfjs')}, tfjs-backend-wasm ${packageVersion('@tensorflow/tfjs-backend-wasm')}`;
    console.log(describeMachine(machine));
    console.log(`${versions}; TF.js backend ${tf.getBackend()}, ${wasmThreads} thread(s), SIMD ${String(simd)}`);
    const patching =
      patchSize === undefined
        ? 'UpscalerJS default (no patchSize, whole image)'
        : `UpscalerJS patchSize ${patchSize} padding ${padding ?? 0}`;
    const ourTiles = tile === undefined ? "ours: each model's manifest tiles" : `ours: tiles of ${tile}`;
    console.log(
      `input: ${path.basename(values.image)} centre crop ${rgb.width}x${rgb.height} PNG; ${patching}; ${ourTiles}; ${reps} reps after one untimed warm-up each (tables: fastest run)\n`,
    );

    const rows: PeerRow[] = [];
    for (const manifest of manifests) {
      const scale = manifest.scale as 2 | 4;
      const upscaler = new Upscaler({ model: upscalerModel(manifest.name) });
      await upscaler.ready;

      const theirs = async (): Promise<void> => {
        const { data, info } = await sharp(input)
          .removeAlpha()
          .toColourspace('srgb')
          .raw()
          .toBuffer({ resolveWithObject: true });
        const pixels = tf.tensor3d(
          new Int32Array(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)),
          [info.height, info.width, 3],
          'int32',
        );
        const out = await upscaler.upscale(pixels, {
          output: 'tensor',
          ...(patchSize === undefined ? {} : { patchSize, padding: padding ?? 0 }),
        });
        pixels.dispose();
        const [height, width] = out.shape;
        const values8 = new Uint8ClampedArray(await out.data<'float32'>());
        out.dispose();
        await sharp(Buffer.from(values8.buffer), { raw: { width, height, channels: 3 } })
          .png({ compressionLevel: 6 })
          .toFile(theirsOut);
      };
      const ours = (loader: ReturnType<typeof createSrModelLoader>) => async (): Promise<void> => {
        const info = await probeImage(input);
        await upscaleImageFile(
          { inputPath: input, outputPath: oursOut, factor: scale === 4 ? '4' : '2', info, modelName: manifest.name },
          loader,
        );
      };

      await theirs();
      await ours(oneThread)();
      const agreementDb = await agreement(oursOut, theirsOut);
      await ours(allThreads)();
      const t: number[] = [];
      const o1: number[] = [];
      const o: number[] = [];
      for (let r = 0; r < reps; r += 1) {
        t.push((await timed(theirs)).ms);
        o1.push((await timed(ours(oneThread))).ms);
        o.push((await timed(ours(allThreads))).ms);
      }
      await upscaler.dispose();
      const theirsT = summarise(t);
      const ours1T = summarise(o1);
      const oursT = summarise(o);
      const row: PeerRow = {
        model: manifest.name,
        scale,
        outWidth: rgb.width * scale,
        outHeight: rgb.height * scale,
        upscalerjs: theirsT,
        ours1: ours1T,
        ours: oursT,
        ratio1: theirsT.best / ours1T.best,
        ratio: theirsT.best / oursT.best,
        ratio1Median: theirsT.median / ours1T.median,
        ratioMedian: theirsT.median / oursT.median,
        agreementDb,
      };
      rows.push(row);
      console.log(
        `${manifest.name.padEnd(16)} UpscalerJS ${theirsT.runs.join(' ')} ms; ours 1 thread ${ours1T.runs.join(' ')} ms (${row.ratio1.toFixed(2)}x), ` +
          `ours ${machine.cores} threads ${oursT.runs.join(' ')} ms (${row.ratio.toFixed(2)}x); outputs agree to ${row.agreementDb.toFixed(1)} dB; TF.js tensors ${tf.memory().numTensors}`,
      );
    }

    const header = TABLES.upscalerjs.header;
    const body = rows.map((r) => [
      shortName(r.model),
      `x${r.scale}`,
      r.upscalerjs.best.toFixed(0),
      r.ours1.best.toFixed(0),
      `${r.ratio1.toFixed(2)}x`,
      r.ours.best.toFixed(0),
      `${r.ratio.toFixed(2)}x`,
      `${r.ratio1Median.toFixed(2)} / ${r.ratioMedian.toFixed(2)}`,
      r.agreementDb.toFixed(1),
    ]);
    console.log(`\n${formatTable(header, body)}\n\nMarkdown:\n\n${markdownTable(header, body)}`);
    await writeResults(values.results, {
      kind: 'upscalerjs',
      machine,
      settings: {
        image: path.basename(values.image),
        width: rgb.width,
        height: rgb.height,
        reps,
        tile,
        patchSize,
        padding,
        wasmThreads,
        simd,
        versions,
      },
      rows,
    });
    const caption = `${path.basename(values.image)}, centre crop ${rgb.width}x${rgb.height} PNG, file in and file out; ${patching}; ${ourTiles}; fastest of ${reps} runs:`;
    await writeDocsBlock(target, 'upscalerjs', [{ caption, header, rows: body }], describeMachine(machine));
    await cli.done({ tables: [{ caption, header, rows: body }] });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** PSNR of the luma of two image files of the same size. */
async function agreement(a: string, b: string): Promise<number> {
  const [x, y] = await Promise.all(
    [a, b].map(async (file) => {
      const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
      return lumaBt601(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), info.width, info.height);
    }),
  );
  return psnr(x!, y!);
}

await main();
