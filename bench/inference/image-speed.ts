/**
 * Speed benchmark: output megapixels per second of every super-resolution model at x2 and x4, two
 * ways on the same input:
 *
 * - file: the real image pipeline, file in, file out, as `media-worker upscale-image` runs it
 *   (probeImage, then upscaleImageFile: decode, tiled network, encode in the input's format);
 * - bare: the tiling engine alone (upscaleRgb on decoded 8-bit RGB already in memory).
 *
 * Bicubic (sharp, file in, file out) is measured too as the floor every model is compared against.
 * Sessions are opened and every path run once before timing (warm-up excluded); then --repeat runs,
 * file and bare alternating so a busy neighbour slows both alike. The tables give the fastest run
 * (the least disturbed on a shared machine); the JSON keeps every run and the median. Writes
 * .cache/bench/speed.json for bench/inference/chart.ts.
 *
 *   media-worker bench image-speed --help
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { probeImage } from '../../src/media/index.js';
import { SessionCache, upscaleRgb, createSrModelLoader, parseExecutionProviders } from '../../src/inference/index.js';
import { upscaleImageFile } from '../../src/kinds/image-upscale/pipeline/index.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../src/paths.js';
import {
  benchRegistry,
  describeMachine,
  formatTable,
  intOption,
  loadRgb,
  machineInfo,
  resultsPath,
  scalesOption,
  shortName,
  splitList,
  srManifests,
  summarise,
  timed,
  type Timing,
  writeResults,
} from '../common.js';
import { TABLES } from '../blocks.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

export interface SpeedRow {
  scale: number;
  /** `bicubic` or a model name. */
  method: string;
  tile?: { size: number; overlap: number; batch: number; tiles: number };
  outWidth: number;
  outHeight: number;
  /** Milliseconds; bare is absent for bicubic. */
  file: Timing;
  bare?: Timing;
  /** From the fastest run of each. */
  fileMpPerS: number;
  bareMpPerS?: number;
}

const FORMATS = ['png', 'jpeg', 'webp'] as const;
type Format = (typeof FORMATS)[number];

const cli = benchCli({
  name: 'image-speed',
  options: {
    image: { type: 'string', arg: 'PATH', help: 'the photo, centre-cropped to --size', default: DEFAULT_SAMPLE_IMAGE },
    size: { type: 'string', arg: 'PX', help: 'crop side in input pixels', default: '512' },
    scales: { type: 'string', arg: '2,4', help: 'the scales measured', default: '2,4' },
    format: { type: 'string', arg: 'png|jpeg|webp', help: 'the file format in and out', default: 'png' },
    results: {
      type: 'string',
      arg: 'FILE',
      help: 'where the results go for bench/inference/chart.ts',
      default: resultsPath('speed'),
    },
  },
  common: {
    model: { help: 'networks to time (default: every super-resolution network at the scales)' },
    providers: { default: 'cpu' },
    threads: { default: '0' },
    tile: {},
    repeat: { default: '2' },
  },
});
const values = cli.values;

async function main(): Promise<void> {
  const target = await docsTarget('image-speed', values);
  const size = intOption('size', values.size, 16) ?? 512;
  const reps = intOption('repeat', values.repeat, 1) ?? 2;
  const threads = intOption('threads', values.threads) ?? 0;
  const tile = intOption('tile', values.tile, 16);
  const scales = scalesOption(values.scales);
  const format = values.format as Format;
  if (!FORMATS.includes(format))
    throw new RangeError(
      `Expected --format to be one of ${FORMATS.join(', ')} but received ${JSON.stringify(values.format)}`,
    );
  const manifests = await srManifests(scales, values.model === undefined ? undefined : splitList(values.model));
  const machine = machineInfo();
  const sessions = new SessionCache({ executionProviders: parseExecutionProviders(values.providers), threads });
  const loadModel = createSrModelLoader({ sessions, ...benchRegistry(), ...(tile === undefined ? {} : { tile }) });

  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-speed-'));
  try {
    const rgb = await loadRgb(values.image, size);
    const input = path.join(dir, `input.${format}`);
    await sharp(rgb.data, { raw: { width: rgb.width, height: rgb.height, channels: 3 } })
      .toFormat(format)
      .toFile(input);
    const output = path.join(dir, `output.${format}`);

    console.log(describeMachine(machine));
    console.log(
      `input: ${path.basename(values.image)} centre crop ${rgb.width}x${rgb.height} ${format}; ${reps} reps (tables: fastest run), warm-up excluded; ORT threads ${threads || 'all cores'}; tiles ${tile === undefined ? "from each model's manifest" : `of ${tile} for every model`}\n`,
    );

    const rows: SpeedRow[] = [];
    for (const scale of scales) {
      const outWidth = rgb.width * scale;
      const outHeight = rgb.height * scale;
      const outMp = (outWidth * outHeight) / 1e6;

      const bicubicOnce = (): Promise<unknown> =>
        sharp(input).resize(outWidth, outHeight, { kernel: 'cubic' }).toFile(output);
      await bicubicOnce();
      const bicubic: number[] = [];
      for (let r = 0; r < reps; r += 1) bicubic.push((await timed(bicubicOnce)).ms);
      const b = summarise(bicubic);
      rows.push({ scale, method: 'bicubic', outWidth, outHeight, file: b, fileMpPerS: outMp / (b.best / 1000) });
      printRow(rows.at(-1)!);

      for (const manifest of manifests.filter((m) => m.scale === scale)) {
        const loaded = await loadModel('image', scale === 4 ? '4' : '2', manifest.name);
        const fileOnce = async (): Promise<void> => {
          const info = await probeImage(input);
          await upscaleImageFile(
            { inputPath: input, outputPath: output, factor: scale === 4 ? '4' : '2', info, modelName: manifest.name },
            loadModel,
          );
        };
        const bareOnce = (): ReturnType<typeof upscaleRgb> => upscaleRgb(loaded.model, rgb, loaded.tiling);
        await fileOnce();
        const warm = await bareOnce();
        const file: number[] = [];
        const bare: number[] = [];
        for (let r = 0; r < reps; r += 1) {
          file.push((await timed(fileOnce)).ms);
          bare.push((await timed(bareOnce)).ms);
        }
        const row: SpeedRow = {
          scale,
          method: manifest.name,
          tile: {
            size: loaded.tiling.tile,
            overlap: loaded.tiling.overlap,
            batch: loaded.tiling.batch ?? 1,
            tiles: warm.tiles,
          },
          outWidth,
          outHeight,
          file: summarise(file),
          bare: summarise(bare),
          fileMpPerS: outMp / (Math.min(...file) / 1000),
          bareMpPerS: outMp / (Math.min(...bare) / 1000),
        };
        rows.push(row);
        printRow(row);
      }
    }

    const header = TABLES.imageSpeed.header;
    const body = rows.map((r) => [
      r.method === 'bicubic' ? 'bicubic (sharp)' : shortName(r.method),
      `x${r.scale}`,
      r.tile === undefined ? '-' : `${r.tile.size}/${r.tile.overlap} (${r.tile.tiles})`,
      r.file.best.toFixed(0),
      r.bare?.best.toFixed(0) ?? '-',
      r.fileMpPerS.toFixed(r.fileMpPerS >= 10 ? 1 : 3),
      r.bareMpPerS?.toFixed(3) ?? '-',
      r.bare === undefined ? '-' : (r.file.best / r.bare.best).toFixed(2),
      r.file.median.toFixed(0),
    ]);
    console.log(`\n${formatTable(header, body)}\n\nMarkdown:\n\n${markdownTable(header, body)}`);
    await writeResults(values.results, {
      kind: 'speed',
      machine,
      settings: {
        image: path.basename(values.image),
        width: rgb.width,
        height: rgb.height,
        format,
        reps,
        threads,
        tile,
      },
      rows,
    });
    const caption = `${path.basename(values.image)}, centre crop ${rgb.width}x${rgb.height} ${format}, fastest of ${reps} runs:`;
    await writeDocsBlock(target, 'image-speed', [{ caption, header, rows: body }], describeMachine(machine));
    await cli.done({ tables: [{ caption, header, rows: body }], data: { rows } });
  } finally {
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  }
}

function printRow(r: SpeedRow): void {
  const bare = r.bare === undefined ? '' : `, bare ${r.bare.runs.join(' ')} ms (best ${r.bareMpPerS?.toFixed(3)} MP/s)`;
  console.log(
    `x${r.scale} ${r.method.padEnd(16)} file ${r.file.runs.join(' ')} ms (best ${r.fileMpPerS.toFixed(3)} MP/s)${bare}`,
  );
}

await main();
