/**
 * Quality benchmark: how much each super-resolution network recovers over bicubic upscaling.
 *
 * Each real photo is centre-cropped (at most --max-side, sides divisible by 4), downscaled by the
 * scale with libvips' bicubic kernel, then brought back to full size by bicubic and by every model
 * through the real tiling engine at the manifest's tile settings (what a job gets). Scores: PSNR
 * and SSIM (11x11 Gaussian, sigma 1.5, K1 0.01, K2 0.03) on the BT.601 luma, border of `scale`
 * pixels left out. Prints per-photo tables and means, and writes .cache/bench/quality.json for
 * scripts/bench-chart.ts.
 *
 *   npm run build && node dist/scripts/bench-quality.js [--photos astronaut,chelsea,...|PATH,...]
 *       [--scales 2,4] [--models esrgan-slim-x4,...] [--max-side 512] [--threads 0] [--json FILE]
 */
import { parseArgs } from 'node:util';
import type { SuperResolutionManifest } from '../src/inference/manifest.js';
import { SessionCache } from '../src/inference/session.js';
import { type RgbImage, upscaleRgb } from '../src/inference/tiling.js';
import { createSrModelLoader } from '../src/upscale/sr-models.js';
import {
  type BenchPhoto,
  describeMachine,
  formatTable,
  intOption,
  loadRgb,
  machineInfo,
  markdownTable,
  mean,
  resizeCubic,
  resultsPath,
  scalesOption,
  selectPhotos,
  shortName,
  splitList,
  srManifests,
  timed,
  writeResults,
} from './bench-common.js';
import { lumaBt601, psnr, ssim, trimBorder } from './bench-metrics.js';

export interface QualityRow {
  photo: string;
  scale: number;
  /** `bicubic` or a model name. */
  method: string;
  psnr: number;
  ssim: number;
  /** Wall time of the upscale itself (bicubic: sharp's resize). */
  ms: number;
  /** Low-resolution input size. */
  width: number;
  height: number;
}

export interface QualityMean {
  scale: number;
  method: string;
  psnr: number;
  ssim: number;
  photos: number;
}

const { values } = parseArgs({
  options: {
    photos: { type: 'string' },
    scales: { type: 'string', default: '2,4' },
    models: { type: 'string' },
    'max-side': { type: 'string', default: '512' },
    threads: { type: 'string', default: '0' },
    json: { type: 'string', default: resultsPath('quality') },
  },
});

async function main(): Promise<void> {
  const scales = scalesOption(values.scales);
  const maxSide = intOption('max-side', values['max-side'], 16) ?? 512;
  const threads = intOption('threads', values.threads) ?? 0;
  const photos = selectPhotos(values.photos);
  const manifests = await srManifests(scales, values.models === undefined ? undefined : splitList(values.models));
  const machine = machineInfo();
  const loadModel = createSrModelLoader({ sessions: new SessionCache({ executionProviders: ['cpu'], threads }) });

  console.log(describeMachine(machine));
  console.log(`photos: ${photos.map((p) => p.name).join(', ')}; centre crop at most ${maxSide}px, sides divisible by 4`);
  console.log(`models: ${manifests.map((m) => `${m.name} (tile ${m.tile.size}, overlap ${m.tile.overlap})`).join(', ')}\n`);

  const rows: QualityRow[] = [];
  for (const photo of photos) {
    const hr = await loadRgb(photo.path, maxSide, 4);
    for (const scale of scales) {
      rows.push(...(await scorePhoto(photo, hr, scale, manifests.filter((m) => m.scale === scale), loadModel)));
    }
  }

  const means = meansOf(rows);
  for (const scale of scales) report(scale, rows, means);
  await writeResults(values.json, { kind: 'quality', machine, settings: { maxSide, threads, photos }, rows, means });
}

async function scorePhoto(
  photo: BenchPhoto,
  hr: RgbImage,
  scale: 2 | 4,
  manifests: readonly SuperResolutionManifest[],
  loadModel: ReturnType<typeof createSrModelLoader>,
): Promise<QualityRow[]> {
  const lr = await resizeCubic(hr, hr.width / scale, hr.height / scale);
  const reference = trimBorder(lumaBt601(hr.data, hr.width, hr.height), scale);
  const score = (method: string, out: RgbImage, ms: number): QualityRow => {
    if (out.width !== hr.width || out.height !== hr.height) {
      throw new Error(`Expected ${method} to give ${hr.width}x${hr.height} but it gave ${out.width}x${out.height}`);
    }
    const y = trimBorder(lumaBt601(out.data, out.width, out.height), scale);
    const row = { photo: photo.name, scale, method, psnr: psnr(reference, y), ssim: ssim(reference, y), ms, width: lr.width, height: lr.height };
    console.log(`${photo.name} x${scale} ${method.padEnd(16)} ${row.psnr.toFixed(2)} dB  SSIM ${row.ssim.toFixed(4)}  ${ms.toFixed(0)} ms`);
    return row;
  };

  const rows: QualityRow[] = [];
  const bicubic = await timed(() => resizeCubic(lr, hr.width, hr.height));
  rows.push(score('bicubic', bicubic.value, bicubic.ms));
  for (const manifest of manifests) {
    const loaded = await loadModel('image', scale === 4 ? '4' : '2', manifest.name);
    const sr = await timed(() => upscaleRgb(loaded.model, lr, loaded.tiling));
    rows.push(score(manifest.name, sr.value, sr.ms));
  }
  return rows;
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
    photos: g.length,
  }));
}

function report(scale: number, rows: readonly QualityRow[], means: readonly QualityMean[]): void {
  const methods = means.filter((m) => m.scale === scale).map((m) => m.method);
  const photos = [...new Set(rows.filter((r) => r.scale === scale).map((r) => r.photo))];
  const header = ['photo', ...methods.map((m) => (m === 'bicubic' ? m : shortName(m)))];
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
  const meanRow = ['mean', ...methods.map((method) => {
    const m = means.find((x) => x.scale === scale && x.method === method)!;
    return cell(m.psnr, m.ssim);
  })];
  const bicubic = means.find((m) => m.scale === scale && m.method === 'bicubic');
  const gainRow = ['gain over bicubic (dB)', ...methods.map((method) => {
    const m = means.find((x) => x.scale === scale && x.method === method)!;
    return bicubic === undefined || method === 'bicubic' ? '' : `${m.psnr - bicubic.psnr >= 0 ? '+' : ''}${(m.psnr - bicubic.psnr).toFixed(2)}`;
  })];
  console.log(`\nx${scale}: PSNR (dB, Y, border ${scale}) / SSIM`);
  console.log(formatTable(header, [...body, meanRow, gainRow]));
  console.log('\nMarkdown:\n');
  console.log(markdownTable(header, [...body, meanRow.map((c) => `**${c}**`), gainRow]));
}

await main();
