/**
 * Tiles sized by memory (src/inference/tile-budget.ts), two tables.
 *
 * Share: for Real-ESRGAN x4plus (overlap 80) on photos of 2 to 12 MP, the input pixels the network
 * computes over the photo's own (1 = nothing recomputed), with the manifest's 512-pixel tile and
 * with the tiles memory budgets allow: this host's default CPU budget (a quarter of its memory) and
 * GPU budgets of 24 and 48 GiB (Dockerfile.cuda's). Pure arithmetic on the tile plans.
 *
 * Time: on this machine, a crop of a real photo through the tiled pipeline with a small tile and
 * with the tile the budget gives (here: the whole crop), each against one untiled ONNX Runtime call
 * on the same crop, measured in the same run: the wall ratio follows the computed share.
 *
 *   media-worker bench tile-budget --help
 */
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import {
  ensureModelFile,
  openSession,
  planTiles,
  type RgbImage,
  srModel,
  tileSizeForBudget,
  upscaleRgb,
} from '../../src/inference/index.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../../src/paths.js';
import { TABLES } from '../blocks.js';
import { describeMachine, intOption, machineInfo, median } from '../common.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'tile-budget',
  options: {},
  common: {
    model: {
      default: 'realesrgan-x4fast',
      help: 'networks timed: realesrgan-x4fast and/or realesrgan-x4plus (15 times its cost)',
    },
    repeat: { default: '1', help: 'runs of each timing (medians are reported)' },
  },
});
const values = cli.values;
const reps = intOption('repeat', values.repeat, 1) ?? 1;
const target = await docsTarget('tile-budget', values);
const machine = describeMachine(machineInfo());
const registry = { modelsDir: path.join(PACKAGE_ROOT, 'models') };
const GiB = 2 ** 30;

const PHOTOS = [
  [1632, 1224],
  [2000, 1500],
  [2400, 1600],
  [3000, 2000],
  [3264, 2448],
  [4000, 3000],
  [4032, 3024],
  [4608, 2592],
] as const;

function share(width: number, height: number, tile: number, overlap: number): number {
  const plan = planTiles({ width, height, tile, overlap, feather: Math.min(overlap, 4) });
  return (plan.count * plan.tileWidth * plan.tileHeight) / (width * height);
}

// Share table: x4plus's recomputed pixels per tile choice.
const x4plus = (await ensureModelFile('realesrgan-x4plus', registry)).manifest;
if (x4plus.task !== 'super-resolution') throw new Error('Expected realesrgan-x4plus to be a super-resolution model');
const { overlap, bytesPerPixel, size } = x4plus.tile;
const budgets: Array<[string, number | undefined]> = [
  ['manifest tile', undefined],
  [`CPU, this host (${(os.totalmem() / 4 / GiB).toFixed(1)} GiB)`, os.totalmem() / 4],
  ['GPU 24 GiB', 24 * GiB],
  ['GPU 48 GiB', 48 * GiB],
];
const shareRows = budgets.map(([label, bytes]) => {
  const tile = tileSizeForBudget({
    ...(bytes === undefined ? {} : { budgetBytes: bytes }),
    ...(bytesPerPixel === undefined ? {} : { bytesPerPixel }),
    overlap,
    fallback: size,
  });
  const shares = PHOTOS.map(([w, h]) => share(w, h, tile, overlap));
  return [label, String(tile), ...shares.map((s) => s.toFixed(3)), Math.max(...shares).toFixed(3)];
});
const shareHeader = [...TABLES.tileBudgetShare.header, ...PHOTOS.map(([w, h]) => `${w}x${h}`), 'worst'];
console.log(markdownTable(shareHeader, shareRows));

// Time table: small tile and whole-crop tile against one untiled call.
async function crop(width: number, height: number): Promise<RgbImage> {
  const { data, info } = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png'))
    .extract({ left: 20, top: 0, width, height })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data), width: info.width, height: info.height, channels: 3 };
}

function planar(image: RgbImage): Float32Array {
  const plane = image.width * image.height;
  const out = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i += 1)
    for (let c = 0; c < 3; c += 1) out[c * plane + i] = image.data[i * 3 + c] as number;
  return out;
}

// x4plus costs 15 times x4fast per pixel: its timing is opt-in (--model realesrgan-x4fast,realesrgan-x4plus).
const cases = [
  { name: 'realesrgan-x4fast', width: 384, height: 288, tiles: [128, 384] },
  { name: 'realesrgan-x4plus', width: 256, height: 192, tiles: [176, 256] },
].filter((c) => values.model.split(',').includes(c.name));
const timeRows: string[][] = [];
for (const c of cases) {
  const file = await ensureModelFile(c.name, registry);
  if (file.manifest.task !== 'super-resolution') continue;
  const session = await openSession(file.path, { executionProviders: ['cpu'] });
  const image = await crop(c.width, c.height);
  const input = planar(image);
  await session.run(input, [1, 3, image.height, image.width]); // warm-up
  for (const tile of c.tiles) {
    const untiled: number[] = [];
    const tiled: number[] = [];
    for (let r = 0; r < reps; r += 1) {
      let t = performance.now();
      await session.run(input, [1, 3, image.height, image.width]);
      untiled.push(performance.now() - t);
      t = performance.now();
      await upscaleRgb(srModel(session, file.manifest.scale), image, { tile, overlap: file.manifest.tile.overlap });
      tiled.push(performance.now() - t);
    }
    const row = [
      c.name,
      `${image.width}x${image.height}`,
      String(tile),
      share(image.width, image.height, tile, file.manifest.tile.overlap).toFixed(3),
      median(untiled).toFixed(0),
      median(tiled).toFixed(0),
      (median(tiled) / median(untiled)).toFixed(3),
    ];
    timeRows.push(row);
    console.log(row.join(' | '));
  }
  await session.release();
}
const timeHeader = TABLES.tileBudgetTime.header;
console.log(`\n${markdownTable(timeHeader, timeRows)}`);

const tables = [
  {
    caption: `Real-ESRGAN x4plus (overlap ${overlap}, ${bytesPerPixel} bytes per tile pixel): computed input pixels over the photo's, per tile choice:`,
    header: shareHeader,
    rows: shareRows,
  },
  {
    caption: `On this machine, ${path.basename('chelsea.png')} crops, medians of ${reps}: the tiled pipeline against one untiled ONNX Runtime call:`,
    header: timeHeader,
    rows: timeRows,
  },
];
await writeDocsBlock(target, 'tile-budget', tables, machine);
await cli.done({ tables });
