/**
 * Tiling benchmarks, two modes.
 *
 * Speed (default): for each super-resolution model whose file is in models/, the tiled pipeline
 * (uint8 in, tiles, batches, blending, uint8 out) against one bare ONNX Runtime call on the whole
 * image (float32 planar tensor prepared beforehand), on a crop of a real photo. Prints the ratio
 * of the two wall times (goal <= 1.15), the same ratio of CPU time (all threads of the process: a
 * steadier figure on a machine that other work shares), the output megapixels per second of the
 * pipeline, and how much of the pipeline's time was spent outside ONNX Runtime. Both are measured in the same run,
 * alternating, after a warm-up; medians of --repeat.
 *
 * Overlap scan (--scan-overlap): for each model and photo, a crop exactly two tiles wide and high,
 * so every kept pixel next to the seams has exactly `overlap` pixels of context; tiled with a hard
 * cut (feather 0) against untiled. Prints the largest 8-bit difference per overlap: the smallest
 * overlap with a difference <= 1 is what a model needs for seamless tiling, the one with 0 is exact.
 *
 *   media-worker bench tiling [--scan-overlap] --help
 *
 * The pipeline runs its session on a worker thread, as the worker daemon does (--inline: on the
 * main thread); the reference call is bare ONNX Runtime on the main thread.
 *
 * Either mode takes [--write-docs [--docs-block NAME]]: the table goes into docs/benchmarks/tiling.md
 * between <!-- bench:tiling begin/end --> (the scan: <!-- bench:tiling-overlap ... -->; bench/doc-block.ts).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import {
  type SuperResolutionManifest,
  listManifests,
  type ModelSession,
  openSession,
  openThreadSession,
  type RgbImage,
  type SrModel,
  gatherTile,
  upscaleRgb,
} from '../../src/inference/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../src/paths.js';
import { TABLES } from '../blocks.js';
import { benchRegistry, describeMachine, machineInfo, modelFilePath } from '../common.js';
import { benchCli } from '../harness.js';
import { type DocTable, docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const PHOTOS = BUNDLED_PHOTOS_DIR;

const cli = benchCli({
  name: 'tiling',
  options: {
    size: { type: 'string', arg: 'PX', help: 'speed: crop side in input pixels', default: '256' },
    overlap: { type: 'string', arg: 'PX', help: "speed: context pixels per tile side (default: the manifest's)" },
    feather: { type: 'string', arg: 'PX', help: "speed: blend band at the seams (default: the engine's)" },
    batch: { type: 'string', arg: 'N', help: "speed: tiles per call (default: the manifest's)" },
    inline: { type: 'boolean', help: "speed: the pipeline's session on the main thread instead of its worker thread" },
    image: { type: 'string', arg: 'PATH', help: 'speed: the photo', default: path.join(PHOTOS, 'astronaut.png') },
    'scan-overlap': {
      type: 'boolean',
      help: 'the overlap scan instead of speed: largest difference tiled against untiled per overlap',
    },
    'scan-tile': { type: 'string', arg: 'PX', help: 'scan: tile edge', default: '64' },
    overlaps: { type: 'string', arg: 'N,N,...', help: 'scan: the overlaps tried', default: '0,2,4,6,8,10,12,16' },
    photos: {
      type: 'string',
      arg: 'FILE,FILE,...',
      help: 'scan: bundled photos',
      default: 'astronaut.png,coffee.png,chelsea.png',
    },
  },
  common: {
    model: { help: 'networks to measure (default: every super-resolution network whose file is present)' },
    threads: { default: '0' },
    tile: { help: "speed: tile edges tried, N[,N...] (default: the manifest's)" },
    repeat: { default: '3', help: 'speed: runs of each measurement (medians are reported)' },
  },
});
const values = cli.values;

function int(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0)
    throw new RangeError(`Expected --${name} to be a non-negative integer but received ${JSON.stringify(text)}`);
  return n;
}

async function crop(file: string, width: number, height: number): Promise<RgbImage> {
  const meta = await sharp(file).metadata();
  const w = Math.min(width, meta.width);
  const h = Math.min(height, meta.height);
  const { data, info } = await sharp(file)
    .extract({ left: Math.floor((meta.width - w) / 2), top: Math.floor((meta.height - h) / 2), width: w, height: h })
    .removeAlpha()
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.length),
    width: info.width,
    height: info.height,
    channels: 3,
  };
}

function srModel(session: ModelSession, manifest: SuperResolutionManifest): SrModel & { runMs: number } {
  const model = {
    scale: manifest.scale,
    range: manifest.input.range,
    runMs: 0,
    async run(input: Float32Array, dims: readonly [number, number, number, number]) {
      const t = performance.now();
      try {
        return await session.run(input, dims);
      } finally {
        model.runMs += performance.now() - t;
      }
    },
  };
  return model;
}

function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

async function selectedManifests(): Promise<SuperResolutionManifest[]> {
  const wanted = values.model?.split(',').map((s) => s.trim());
  const all = (await listManifests(benchRegistry())).filter(
    (m): m is SuperResolutionManifest => m.task === 'super-resolution',
  );
  return all.filter((m) => (wanted ? wanted.includes(m.name) : existsSync(modelFilePath(m))));
}

async function speed(target: string | undefined, machine: string): Promise<DocTable[]> {
  const size = int('size', values.size) ?? 256;
  const reps = Math.max(1, int('repeat', values.repeat) ?? 3);
  const image = await crop(values.image, size, size);
  console.log(`image: ${path.basename(values.image)} crop ${image.width}x${image.height}; reps ${reps}; medians`);
  console.log(
    'model            | tile/ovl/bat | tiles | ORT untiled ms | pipeline ms | ratio | cpu ratio | outside ORT ms | out MP/s',
  );
  const rows: string[][] = [];
  for (const manifest of await selectedManifests()) {
    const file = modelFilePath(manifest);
    const settings = { threads: int('threads', values.threads) ?? 0 };
    // The reference is bare ONNX Runtime on this thread; the pipeline uses the session as the
    // worker does (on its own thread, unless --inline).
    const session = await openSession(file, settings);
    const pipelineSession = values.inline ? session : await openThreadSession(file, settings);
    const model = srModel(pipelineSession, manifest);
    // The untiled call's input is prepared outside the timing: only ONNX Runtime is measured.
    const [lo, hi] = manifest.input.range;
    const planar = new Float32Array(3 * image.width * image.height);
    gatherTile(image.data, image.width, 0, 0, image.width, image.height, planar, 0, (hi - lo) / 255, lo);
    const dims = [1, 3, image.height, image.width] as const;
    await session.run(planar, dims);

    const tiles =
      values.tile === undefined ? [manifest.tile.size] : values.tile.split(',').map((t) => int('tile', t) ?? 0);
    for (const tile of tiles) {
      const options = {
        tile,
        overlap: int('overlap', values.overlap) ?? manifest.tile.overlap,
        batch: int('batch', values.batch) ?? manifest.tile.batch,
        ...(values.feather === undefined ? {} : { feather: int('feather', values.feather) ?? 0 }),
      };
      await upscaleRgb(model, image, options);
      const untiled: number[] = [];
      const tiled: number[] = [];
      const untiledCpu: number[] = [];
      const tiledCpu: number[] = [];
      const outside: number[] = [];
      let count = 0;
      // Alternating, so that a neighbour's load slows both sides alike.
      for (let r = 0; r < reps; r += 1) {
        let cpu = process.cpuUsage();
        let t = performance.now();
        await session.run(planar, dims);
        untiled.push(performance.now() - t);
        untiledCpu.push(cpuMs(process.cpuUsage(cpu)));
        model.runMs = 0;
        cpu = process.cpuUsage();
        t = performance.now();
        const result = await upscaleRgb(model, image, options);
        const wall = performance.now() - t;
        tiledCpu.push(cpuMs(process.cpuUsage(cpu)));
        tiled.push(wall);
        outside.push(wall - model.runMs);
        count = result.tiles;
      }
      const u = median(untiled);
      const p = median(tiled);
      const outMp = (image.width * image.height * manifest.scale * manifest.scale) / 1e6;
      const row = [
        manifest.name,
        `${options.tile}/${options.overlap}/${options.batch}`,
        String(count),
        u.toFixed(0),
        p.toFixed(0),
        (p / u).toFixed(3),
        (median(tiledCpu) / median(untiledCpu)).toFixed(3),
        median(outside).toFixed(1),
        (outMp / (p / 1000)).toFixed(3),
      ];
      rows.push(row);
      const widths = [16, 12, 5, 14, 11, 5, 9, 14, 8];
      console.log(row.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | '));
    }
    await session.release();
    await pipelineSession.release();
  }
  const header = TABLES.tilingSpeed.header;
  console.log(`\n${markdownTable(header, rows)}`);
  const caption = `${path.basename(values.image)}, crop ${image.width}x${image.height}, medians of ${reps}; the pipeline ${values.inline ? 'on the main thread' : 'on its worker thread'}:`;
  await writeDocsBlock(target, 'tiling', [{ caption, header, rows }], machine);
  return [{ caption, header, rows }];
}

async function scanOverlap(target: string | undefined, machine: string): Promise<DocTable[]> {
  const tile = int('scan-tile', values['scan-tile']) ?? 64;
  const overlaps = values.overlaps
    .split(',')
    .map((s) => int('overlaps', s) ?? 0)
    .filter((o) => tile > 2 * o);
  const photos = values.photos.split(',').map((s) => s.trim());
  console.log(`tile ${tile}, feather 0, crop = two tiles per axis (exactly \`overlap\` context at the seams)`);
  console.log(`max |tiled - untiled| over ${photos.join(', ')} (8-bit), and pixels off by more than 1`);
  console.log(`model            | ${overlaps.map((o) => `ovl ${o}`.padStart(12)).join(' | ')}`);
  const rows: string[][] = [];
  for (const manifest of await selectedManifests()) {
    const session = await openSession(modelFilePath(manifest), { threads: int('threads', values.threads) ?? 0 });
    const model = srModel(session, manifest);
    const cells: string[] = [];
    for (const overlap of overlaps) {
      let max = 0;
      let over = 0;
      for (const photo of photos) {
        const side = 2 * tile - 2 * overlap;
        const image = await crop(path.join(PHOTOS, photo), side, side);
        const reference = await upscaleRgb(model, image, { tile: side, overlap: 0, feather: 0 });
        const result = await upscaleRgb(model, image, { tile, overlap, feather: 0 });
        for (let i = 0; i < result.data.length; i += 1) {
          const d = Math.abs(result.data[i]! - reference.data[i]!);
          if (d > max) max = d;
          if (d > 1) over += 1;
        }
      }
      cells.push(`${max} (${over})`);
    }
    rows.push([manifest.name, ...cells]);
    console.log(`${manifest.name.padEnd(16)} | ${cells.map((c) => c.padStart(12)).join(' | ')}`);
    await session.release();
  }
  const header = [...TABLES.tilingOverlap.header, ...overlaps.map((o) => `overlap ${o}`)];
  console.log(`\n${markdownTable(header, rows)}`);
  const caption = `Largest 8-bit difference, tiled (tile ${tile}, hard cut) against untiled, over ${photos.join(', ')}; in brackets, values off by more than 1:`;
  await writeDocsBlock(target, 'tiling', [{ caption, header, rows }], machine);
  return [{ caption, header, rows }];
}

const scan = values['scan-overlap'];
const target = await docsTarget('tiling', values, scan ? 'tiling-overlap' : 'tiling');
const machine = describeMachine(machineInfo());
console.log(machine);
await cli.done({ tables: await (scan ? scanOverlap(target, machine) : speed(target, machine)) });
