/**
 * Quality benchmark: how much each super-resolution network recovers over bicubic upscaling, and
 * what it costs on this machine, so that an engineer sees whether their network beats the default.
 *
 * Each real photo is centre-cropped (at most --max-side, sides divisible by 4), downscaled by the
 * scale with libvips' bicubic kernel, then brought back to full size by bicubic and by every model
 * through the real tiling engine at the manifest's tile settings (what a job gets). A network of a
 * larger scale (the Real-ESRGAN x4 nets at x2) is followed by a Lanczos-3 downscale, as a job is.
 * Scores, fidelity: PSNR and SSIM (11x11 Gaussian, sigma 1.5, K1 0.01, K2 0.03) on the BT.601 luma,
 * border of `scale` pixels left out; what users see: sharpness (mean luma gradient over the
 * original's; bicubic is about 0.5 at x4) and lattice blockiness (the mean luma step across every
 * `scale`-th row and column boundary over the mean step elsewhere; 1.0 = no grid); speed: output
 * megapixels per second of the upscale. Prints per-photo tables and means, writes
 * .cache/bench/quality.json for bench/inference/chart.ts, draws PSNR against speed (the chart of bench/inference/chart.ts,
 * the default networks ringed), and with --picture a side-by-side PNG (original, bicubic, each
 * network) of one region of --picture-photo.
 *
 *   media-worker bench quality --model realesrgan-x4fast,my-net    (the bundled photos, small crops)
 */
import {
  type SuperResolutionManifest,
  SessionCache,
  type RgbImage,
  upscaleRgb,
  createSrModelLoader,
  parseExecutionProviders,
  parseSrModelChoices,
  chooseSrModel,
} from '../../src/inference/index.js';
import {
  BENCH_PHOTOS,
  benchRegistry,
  type BenchPhoto,
  describeMachine,
  formatTable,
  intOption,
  loadRgb,
  machineInfo,
  type MachineInfo,
  mean,
  resizeCubic,
  resizeLanczos,
  resultsPath,
  scalesOption,
  selectPhotos,
  shortName,
  splitList,
  srManifests,
  timed,
  writeResults,
} from '../common.js';
import { blockiness, lumaBt601, psnr, sharpnessRatio, ssim, trimBorder } from '../metrics.js';
import { TABLES } from '../blocks.js';
import { type DocTable, docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';
import sharp from 'sharp';
import { benchCli } from '../harness.js';
import { type ChartPoint, renderChart, writeChart } from './chart.js';

export interface QualityRow {
  photo: string;
  scale: number;
  /** `bicubic` or a model name. */
  method: string;
  psnr: number;
  ssim: number;
  /** Mean luma gradient over the original's. */
  sharpness: number;
  /** Lattice blockiness at the input's pixel boundaries (1.0: none). */
  blockiness: number;
  /** Wall time of the upscale itself (bicubic: sharp's resize). */
  ms: number;
  /** Low-resolution input size. */
  width: number;
  height: number;
}

/** A method's means over the photos of one scale. */
export type QualityMean = Pick<QualityRow, 'scale' | 'method' | 'psnr' | 'ssim' | 'sharpness' | 'blockiness'> & {
  photos: number;
  /** Output megapixels per second over the photos (total pixels over total time). */
  mpPerS: number;
};

const cli = benchCli({
  name: 'quality',
  options: {
    photos: {
      type: 'string',
      arg: 'NAME|PATH[,...]',
      help: `photos: ${BENCH_PHOTOS.map((p) => p.name).join(', ')} or files`,
      default: 'astronaut,chelsea,coffee',
    },
    scales: { type: 'string', arg: '2,4', help: 'the scales measured', default: '2,4' },
    'max-side': {
      type: 'string',
      arg: 'PX',
      help: 'centre crop of each photo, at most this many pixels a side',
      default: '192',
    },
    results: {
      type: 'string',
      arg: 'FILE',
      help: 'where the results go for bench/inference/chart.ts',
      default: resultsPath('quality'),
    },
    chart: {
      type: 'string',
      arg: 'FILE',
      help: 'PSNR against speed, drawn to FILE.svg and FILE.png',
      default: resultsPath('quality-chart').replace(/\.json$/, ''),
    },
    picture: {
      type: 'string',
      arg: 'FILE.png',
      help: 'also a side-by-side picture of one region (original, bicubic, each network)',
    },
    'picture-photo': { type: 'string', arg: 'NAME', help: 'the photo of --picture', default: 'chelsea' },
    'picture-region': {
      type: 'string',
      arg: 'X,Y,SIZE',
      help: 'the region of --picture, in output pixels',
      default: '0,0,192',
    },
  },
  common: {
    model: { help: 'networks to compare (default: every super-resolution network at the scales)' },
    providers: { default: 'cpu' },
    threads: { default: '0' },
    repeat: { default: '1', help: 'timed runs of each upscale (the fastest is reported; the scores do not change)' },
  },
  notes:
    'The default run (three bundled photos, 192-pixel crops) takes a minute or two on 2 cores with every network;\n--model A,B compares just those (and bicubic).',
});
const values = cli.values;

async function main(): Promise<void> {
  const target = await docsTarget('quality', values);
  const scales = scalesOption(values.scales);
  const maxSide = intOption('max-side', values['max-side'], 16) ?? 512;
  const threads = intOption('threads', values.threads) ?? 0;
  const repeat = intOption('repeat', values.repeat, 1) ?? 1;
  const photos = selectPhotos(values.photos);
  const manifests = await srManifests([2, 3, 4, 8], values.model === undefined ? undefined : splitList(values.model));
  /**
   * The networks measured at a scale: that scale's own, and larger ones followed by a downscale (a
   * job's path): the x4 Real-ESRGAN nets and adopted networks (models add), which jobs use so.
   */
  const atScale = (scale: number): SuperResolutionManifest[] =>
    manifests.filter(
      (m) =>
        m.scale === scale || (m.scale > scale && (m.source.kind === 'ncnn-npm-tarball' || m.source.kind === 'adopted')),
    );
  const machine = machineInfo();
  const providers = parseExecutionProviders(values.providers);
  const loadModel = createSrModelLoader({
    sessions: new SessionCache({ executionProviders: providers, threads }),
    ...benchRegistry(),
  });

  console.log(describeMachine(machine));
  console.log(
    `photos: ${photos.map((p) => p.name).join(', ')}; centre crop at most ${maxSide}px, sides divisible by 4`,
  );
  console.log(
    `models: ${manifests.map((m) => `${m.name} (tile ${m.tile.size}, overlap ${m.tile.overlap})`).join(', ')}\n`,
  );

  // One untimed run of each network first: its first call pays for ONNX Runtime's warm-up, not the photo.
  const warmUp = await loadRgb(photos[0]!.path, 32, 4);
  for (const m of manifests) {
    const loaded = await loadModel('image', m.scale >= 4 ? '4' : '2', m.name);
    await upscaleRgb(loaded.model, warmUp, loaded.tiling);
  }

  const rows: QualityRow[] = [];
  for (const photo of photos) {
    const hr = await loadRgb(photo.path, maxSide, 4);
    for (const scale of scales) {
      const outputs = new Map<string, RgbImage>();
      rows.push(...(await scorePhoto(photo, hr, scale, atScale(scale), loadModel, outputs, repeat)));
      if (values.picture !== undefined && photo.name === values['picture-photo'] && scale === Math.max(...scales)) {
        await sideBySide(values.picture, hr, outputs, values['picture-region']);
      }
    }
  }

  const means = meansOf(rows);
  const tables = scales.flatMap((scale) => report(scale, rows, means));
  tables.push(...scales.map((scale) => speedTable(scale, means)));
  await writeResults(values.results, {
    kind: 'quality',
    machine,
    settings: { maxSide, threads, providers, photos },
    rows,
    means,
  });
  await drawChart(values.chart, means, photos.length, maxSide, machine);
  await writeDocsBlock(target, 'quality', tables.slice(0, tables.length - scales.length), describeMachine(machine));
  await cli.done({ tables, data: { rows, means } });
}

/** PSNR against output megapixels per second, the default networks (MEDIA_WORKER_SR_MODELS' defaults) ringed. */
async function drawChart(
  file: string,
  means: readonly QualityMean[],
  photos: number,
  maxSide: number,
  machine: MachineInfo,
): Promise<void> {
  const choices = parseSrModelChoices('');
  const defaults = (['image', 'video'] as const).map((use) => chooseSrModel(choices, use, '4'));
  const points: ChartPoint[] = means.map((m) => ({ method: m.method, scale: m.scale, psnr: m.psnr, mpPerS: m.mpPerS }));
  const svg = renderChart(points, {
    title: 'Super-resolution quality against speed on this machine',
    subtitle: `PSNR: mean of ${photos} bicubic-downscaled photos (crops of at most ${maxSide} px). ${machine.cpu}, ${machine.cores} cores, ${machine.date.slice(0, 10)}`,
    xLabel: 'output megapixels per second of the upscale, in memory (log scale; right is faster)',
    highlight: defaults,
  });
  await writeChart(file, svg);
}

/** Speed of each method at a scale, with sharpness and blockiness beside it: the at-a-glance comparison. */
function speedTable(scale: number, means: readonly QualityMean[]): DocTable {
  const header = ['method', 'PSNR dB', 'sharpness', 'blockiness', 'output MP/s'];
  const rows = means
    .filter((m) => m.scale === scale)
    .map((m) => [
      m.method,
      m.psnr.toFixed(2),
      m.sharpness.toFixed(3),
      m.blockiness.toFixed(3),
      m.mpPerS.toPrecision(3),
    ]);
  const caption = `x${scale}: at a glance (means over the photos; speed on this machine)`;
  console.log(`\n${caption}`);
  console.log(formatTable(header, rows));
  return { caption, header, rows };
}

async function scorePhoto(
  photo: BenchPhoto,
  hr: RgbImage,
  scale: 2 | 4,
  manifests: readonly SuperResolutionManifest[],
  loadModel: ReturnType<typeof createSrModelLoader>,
  outputs: Map<string, RgbImage>,
  repeat: number,
): Promise<QualityRow[]> {
  const lr = await resizeCubic(hr, hr.width / scale, hr.height / scale);
  const original = lumaBt601(hr.data, hr.width, hr.height);
  const reference = trimBorder(original, scale);
  const score = (method: string, out: RgbImage, ms: number): QualityRow => {
    if (out.width !== hr.width || out.height !== hr.height) {
      throw new Error(`Expected ${method} to give ${hr.width}x${hr.height} but it gave ${out.width}x${out.height}`);
    }
    outputs.set(method, out);
    const full = lumaBt601(out.data, out.width, out.height);
    const y = trimBorder(full, scale);
    const row = {
      photo: photo.name,
      scale,
      method,
      psnr: psnr(reference, y),
      ssim: ssim(reference, y),
      sharpness: sharpnessRatio(full, original),
      blockiness: blockiness(full, scale),
      ms,
      width: lr.width,
      height: lr.height,
    };
    console.log(
      `${photo.name} x${scale} ${method.padEnd(18)} ${row.psnr.toFixed(2)} dB  SSIM ${row.ssim.toFixed(4)}  sharpness ${row.sharpness.toFixed(3)}  blockiness ${row.blockiness.toFixed(3)}  ${ms.toFixed(0)} ms`,
    );
    return row;
  };

  const rows: QualityRow[] = [];
  const bicubic = await fastest(repeat, () => resizeCubic(lr, hr.width, hr.height));
  rows.push(score('bicubic', bicubic.value, bicubic.ms));
  for (const manifest of manifests) {
    const loaded = await loadModel('image', scale === 4 ? '4' : '2', manifest.name);
    const sr = await fastest(repeat, async () => {
      const out = await upscaleRgb(loaded.model, lr, loaded.tiling);
      return out.width === hr.width ? out : resizeLanczos(out, hr.width, hr.height);
    });
    rows.push(score(manifest.name, sr.value, sr.ms));
  }
  return rows;
}

/** The fastest of `repeat` timed runs (the least disturbed on a shared machine), with its result. */
async function fastest<T>(repeat: number, fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  let best = await timed(fn);
  for (let r = 1; r < repeat; r += 1) {
    const run = await timed(fn);
    if (run.ms < best.ms) best = run;
  }
  return best;
}

/** One region of the original and of every method's output, side by side and labelled, 2x nearest so pixels show. */
async function sideBySide(
  file: string,
  hr: RgbImage,
  outputs: ReadonlyMap<string, RgbImage>,
  region: string,
): Promise<void> {
  const [left = 0, top = 0, size = 192] = region.split(',').map(Number);
  const zoom = 2;
  const panels = [['original', hr] as const, ...outputs.entries()];
  const edge = size * zoom;
  const label = 24;
  const composites = await Promise.all(
    panels.map(async ([name, image], i) => {
      const crop = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
        .extract({ left, top, width: Math.min(size, image.width - left), height: Math.min(size, image.height - top) })
        .resize(edge, edge, { kernel: 'nearest', fit: 'fill' })
        .png()
        .toBuffer();
      const text = Buffer.from(
        `<svg width="${edge}" height="${label}"><rect width="100%" height="100%" fill="white"/><text x="6" y="17" font-family="sans-serif" font-size="15">${name}</text></svg>`,
      );
      return [
        { input: crop, left: i * (edge + 4), top: label },
        { input: text, left: i * (edge + 4), top: 0 },
      ];
    }),
  );
  await sharp({
    create: { width: panels.length * (edge + 4) - 4, height: edge + label, channels: 3, background: '#ffffff' },
  })
    .composite(composites.flat())
    .png()
    .toFile(file);
  console.log(`side-by-side picture: ${file}`);
}

function meansOf(rows: readonly QualityRow[]): QualityMean[] {
  const groups = new Map<string, QualityRow[]>();
  for (const r of rows) {
    const key = `${r.scale}\0${r.method}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return [...groups.values()].map((g) => ({
    scale: g[0]!.scale,
    method: g[0]!.method,
    psnr: mean(g.map((r) => r.psnr)),
    ssim: mean(g.map((r) => r.ssim)),
    sharpness: mean(g.map((r) => r.sharpness)),
    blockiness: mean(g.map((r) => r.blockiness)),
    photos: g.length,
    mpPerS:
      g.reduce((sum, r) => sum + r.width * r.height * r.scale * r.scale, 0) /
      1e6 /
      (g.reduce((sum, r) => sum + r.ms, 0) / 1000),
  }));
}

/** Prints the tables of one scale and returns them as they go into the docs. */
function report(scale: number, rows: readonly QualityRow[], means: readonly QualityMean[]): DocTable[] {
  const methods = means.filter((m) => m.scale === scale).map((m) => m.method);
  const photos = [...new Set(rows.filter((r) => r.scale === scale).map((r) => r.photo))];
  const header = [...TABLES.quality.header, ...methods.map((m) => (m === 'bicubic' ? m : shortName(m)))];
  const cell = (p: number, s: number): string => `${p.toFixed(2)} / ${s.toFixed(4)}`;
  const body = photos.map((photo) => {
    const size = rows.find((r) => r.photo === photo && r.scale === scale);
    return [
      `${photo} (${size?.width}x${size?.height} in)`,
      ...methods.map((method) => {
        const r = rows.find((x) => x.photo === photo && x.scale === scale && x.method === method);
        return r === undefined ? '' : cell(r.psnr, r.ssim);
      }),
    ];
  });
  const meanRow = [
    'mean',
    ...methods.map((method) => {
      const m = means.find((x) => x.scale === scale && x.method === method)!;
      return cell(m.psnr, m.ssim);
    }),
  ];
  const bicubic = means.find((m) => m.scale === scale && m.method === 'bicubic');
  const gainRow = [
    'gain over bicubic (dB)',
    ...methods.map((method) => {
      const m = means.find((x) => x.scale === scale && x.method === method)!;
      return bicubic === undefined || method === 'bicubic'
        ? ''
        : `${m.psnr - bicubic.psnr >= 0 ? '+' : ''}${(m.psnr - bicubic.psnr).toFixed(2)}`;
    }),
  ];
  const fidelity = {
    caption: `x${scale}: PSNR (dB, Y, border ${scale}) / SSIM`,
    header,
    rows: [...body, meanRow.map((c) => `**${c}**`), gainRow],
  };
  console.log(`\n${fidelity.caption}`);
  console.log(formatTable(header, [...body, meanRow, gainRow]));
  console.log('\nMarkdown:\n');
  console.log(markdownTable(header, fidelity.rows));

  const seen = (p: number, b: number): string => `${p.toFixed(2)} / ${b.toFixed(2)}`;
  const seenBody = photos.map((photo) => [
    photo,
    ...methods.map((method) => {
      const r = rows.find((x) => x.photo === photo && x.scale === scale && x.method === method);
      return r === undefined ? '' : seen(r.sharpness, r.blockiness);
    }),
  ]);
  const seenMean = [
    'mean',
    ...methods.map((method) => {
      const m = means.find((x) => x.scale === scale && x.method === method)!;
      return seen(m.sharpness, m.blockiness);
    }),
  ];
  const worstBlock = [
    'worst blockiness',
    ...methods.map((method) =>
      Math.max(...rows.filter((x) => x.scale === scale && x.method === method).map((r) => r.blockiness)).toFixed(2),
    ),
  ];
  const seenTable = {
    caption: `x${scale}: sharpness (gradient ratio to the original) / blockiness (grid every ${scale} px; 1.00 = none)`,
    header,
    rows: [...seenBody, seenMean.map((c) => `**${c}**`), worstBlock],
  };
  console.log(`\n${seenTable.caption}`);
  console.log(formatTable(header, [...seenBody, seenMean, worstBlock]));
  console.log('\nMarkdown:\n');
  console.log(markdownTable(header, seenTable.rows));
  return [fidelity, seenTable];
}

await main();
