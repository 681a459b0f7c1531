/**
 * The quality-against-speed chart of docs/benchmarks/image-upscalerjs.md: mean PSNR (bench/inference/quality.ts) against output
 * megapixels per second through the file-in, file-out pipeline (bench/inference/image-speed.ts, log scale), one
 * point per model and factor, bicubic as the reference. Drawn as SVG by hand, rendered to PNG by
 * sharp (librsvg).
 *
 *   media-worker bench chart --help
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { readResults, resultsPath, shortName, splitList } from '../common.js';
import { benchCli } from '../harness.js';

export interface ChartPoint {
  /** `bicubic` or a model name. */
  method: string;
  scale: number;
  psnr: number;
  mpPerS: number;
}

export interface ChartOptions {
  title: string;
  subtitle: string;
  /** Model names drawn with a ring and marked as the default. */
  highlight?: readonly string[];
  /** The x axis' title; default: the file pipeline's speed (bench/inference/image-speed.ts). */
  xLabel?: string;
  width?: number;
  height?: number;
}

const COLOURS: Record<number, string> = { 2: '#1f77b4', 4: '#d62728' };
const FONT = 'font-family="DejaVu Sans, Liberation Sans, sans-serif"';

/** Powers of ten covering [lo, hi], at least one decade. */
export function decades(lo: number, hi: number): number[] {
  if (!(lo > 0) || !(hi >= lo)) throw new RangeError(`Expected 0 < lo <= hi but received ${lo} and ${hi}`);
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e += 1) out.push(10 ** e);
  if (out.length < 2) out.push(out[0]! * 10);
  return out;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function formatRate(v: number): string {
  return v >= 10 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v >= 0.1 ? v.toFixed(2) : v.toFixed(3);
}

export function renderChart(points: readonly ChartPoint[], options: ChartOptions): string {
  if (points.length === 0) throw new RangeError('Expected at least one point to draw but received none');
  const width = options.width ?? 1000;
  const height = options.height ?? 640;
  const m = { left: 80, right: 30, top: 86, bottom: 70 };
  const pw = width - m.left - m.right;
  const ph = height - m.top - m.bottom;

  const xTicks = decades(Math.min(...points.map((p) => p.mpPerS)), Math.max(...points.map((p) => p.mpPerS)));
  const xLo = Math.log10(xTicks[0]!);
  const xHi = Math.log10(xTicks.at(-1)!);
  const x = (v: number): number => m.left + ((Math.log10(v) - xLo) / (xHi - xLo)) * pw;
  const psnrs = points.map((p) => p.psnr);
  const yLo = Math.floor(Math.min(...psnrs) - 0.5);
  const yHi = Math.ceil(Math.max(...psnrs) + 0.5);
  const y = (v: number): number => m.top + (1 - (v - yLo) / (yHi - yLo)) * ph;

  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
  );
  parts.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  parts.push(
    `<text x="${m.left}" y="32" ${FONT} font-size="20" font-weight="bold" fill="#222">${escapeXml(options.title)}</text>`,
  );
  parts.push(`<text x="${m.left}" y="56" ${FONT} font-size="13" fill="#555">${escapeXml(options.subtitle)}</text>`);

  // Grid: decades and their 2x and 5x on x, every dB (half dB when the range is small) on y.
  for (const t of xTicks) {
    parts.push(`<line x1="${x(t)}" y1="${m.top}" x2="${x(t)}" y2="${m.top + ph}" stroke="#ccc"/>`);
    parts.push(
      `<text x="${x(t)}" y="${m.top + ph + 20}" ${FONT} font-size="13" fill="#333" text-anchor="middle">${String(Number(t.toPrecision(1)))}</text>`,
    );
    for (const k of [2, 5]) {
      if (t * k < xTicks.at(-1)!)
        parts.push(`<line x1="${x(t * k)}" y1="${m.top}" x2="${x(t * k)}" y2="${m.top + ph}" stroke="#eee"/>`);
    }
  }
  const yStep = yHi - yLo > 6 ? 1 : 0.5;
  for (let v = yLo; v <= yHi + 1e-9; v += yStep) {
    parts.push(
      `<line x1="${m.left}" y1="${y(v)}" x2="${m.left + pw}" y2="${y(v)}" stroke="${Number.isInteger(v) ? '#ccc' : '#eee'}"/>`,
    );
    if (Number.isInteger(v))
      parts.push(
        `<text x="${m.left - 10}" y="${y(v) + 4}" ${FONT} font-size="13" fill="#333" text-anchor="end">${v}</text>`,
      );
  }
  parts.push(`<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#888"/>`);
  parts.push(
    `<text x="${m.left + pw / 2}" y="${height - 22}" ${FONT} font-size="14" fill="#222" text-anchor="middle">${escapeXml(options.xLabel ?? 'output megapixels per second, file in to file out (log scale; right is faster)')}</text>`,
  );
  parts.push(
    `<text transform="translate(24 ${m.top + ph / 2}) rotate(-90)" ${FONT} font-size="14" fill="#222" text-anchor="middle">mean PSNR, dB (Y, border trimmed; up is better)</text>`,
  );

  for (const scale of [...new Set(points.map((p) => p.scale))].sort()) {
    const colour = COLOURS[scale] ?? '#444';
    const series = points.filter((p) => p.scale === scale).sort((a, b) => a.mpPerS - b.mpPerS);
    parts.push(
      `<polyline points="${series.map((p) => `${x(p.mpPerS)},${y(p.psnr)}`).join(' ')}" fill="none" stroke="${colour}" stroke-width="1.5" stroke-dasharray="5 4" opacity="0.6"/>`,
    );
    series.forEach((p, i) => {
      const cx = x(p.mpPerS);
      const cy = y(p.psnr);
      const bicubic = p.method === 'bicubic';
      const marker =
        scale === 4
          ? `<rect x="${cx - 6}" y="${cy - 6}" width="12" height="12" fill="${bicubic ? '#fff' : colour}" stroke="${colour}" stroke-width="2"/>`
          : `<circle cx="${cx}" cy="${cy}" r="6.5" fill="${bicubic ? '#fff' : colour}" stroke="${colour}" stroke-width="2"/>`;
      parts.push(marker);
      const chosen = options.highlight?.includes(p.method) ?? false;
      if (chosen) parts.push(`<circle cx="${cx}" cy="${cy}" r="13" fill="none" stroke="#2ca02c" stroke-width="2.5"/>`);
      const name = `${bicubic ? 'bicubic' : shortName(p.method)} x${scale}${chosen ? ' (default)' : ''}`;
      // Alternate labels above and below the line so neighbours on a series do not collide.
      const above = i % 2 === 0;
      const anchor = cx > m.left + pw - 140 ? 'end' : cx < m.left + 60 ? 'start' : 'middle';
      const nameY = above ? cy - 34 : cy + 28;
      parts.push(
        `<text x="${cx}" y="${nameY}" ${FONT} font-size="13" font-weight="bold" fill="${colour}" text-anchor="${anchor}">${escapeXml(name)}</text>`,
      );
      parts.push(
        `<text x="${cx}" y="${nameY + 15}" ${FONT} font-size="12" fill="#444" text-anchor="${anchor}">${p.psnr.toFixed(2)} dB, ${formatRate(p.mpPerS)} MP/s</text>`,
      );
    });
  }

  // Legend, top right inside the plot: fast methods (bicubic) sit low on the right.
  const lx = m.left + pw - 190;
  const ly = m.top + 10;
  parts.push(`<rect x="${lx}" y="${ly}" width="180" height="60" fill="#fff" stroke="#bbb"/>`);
  parts.push(`<circle cx="${lx + 16}" cy="${ly + 18}" r="6" fill="${COLOURS[2]}"/>`);
  parts.push(`<text x="${lx + 30}" y="${ly + 22}" ${FONT} font-size="13" fill="#222">x2 (hollow: bicubic)</text>`);
  parts.push(`<rect x="${lx + 10}" y="${ly + 36}" width="12" height="12" fill="${COLOURS[4]}"/>`);
  parts.push(`<text x="${lx + 30}" y="${ly + 46}" ${FONT} font-size="13" fill="#222">x4 (hollow: bicubic)</text>`);
  parts.push('</svg>');
  return parts.join('\n');
}

/** Joins the two benchmarks' results: mean PSNR per method and scale with its file-pipeline speed. */
export function joinResults(quality: unknown, speed: unknown): ChartPoint[] {
  const means = field(quality, 'means') as { scale: number; method: string; psnr: number }[];
  const rows = field(speed, 'rows') as { scale: number; method: string; fileMpPerS: number }[];
  const points: ChartPoint[] = [];
  for (const q of means) {
    const s = rows.find((r) => r.scale === q.scale && r.method === q.method);
    if (s === undefined) {
      console.error(`no speed figure for ${q.method} x${q.scale}; left off the chart`);
      continue;
    }
    points.push({ method: q.method, scale: q.scale, psnr: q.psnr, mpPerS: s.fileMpPerS });
  }
  return points;
}

function field(results: unknown, name: string): unknown[] {
  if (typeof results !== 'object' || results === null || !(name in results)) {
    throw new Error(`Expected benchmark results with a "${name}" list but received something else`);
  }
  const value = (results as Record<string, unknown>)[name];
  if (!Array.isArray(value)) throw new Error(`Expected "${name}" to be a list in the benchmark results`);
  return value;
}

function speedLine(results: unknown): string {
  const { machine: m, settings: s } = results as {
    machine?: { date?: string; cpu?: string; cores?: number };
    settings?: { image?: string; width?: number; height?: number };
  };
  const input = s === undefined ? '' : `${path.parse(s.image ?? '?').name} ${s.width ?? '?'}x${s.height ?? '?'} in, `;
  return m === undefined
    ? input
    : `${input}${m.cpu ?? 'unknown CPU'}, ${m.cores ?? '?'} cores, ${m.date?.slice(0, 10) ?? ''}`;
}

/** Writes the chart as FILE.svg and FILE.png. */
export async function writeChart(file: string, svg: string): Promise<void> {
  await mkdir(path.dirname(path.resolve(file)), { recursive: true });
  await writeFile(`${file}.svg`, `${svg}\n`);
  await sharp(Buffer.from(svg), { density: 144 }).png({ compressionLevel: 9 }).toFile(`${file}.png`);
  console.log(`chart written to ${file}.svg and ${file}.png`);
}

async function main(): Promise<void> {
  const cli = benchCli({
    name: 'chart',
    options: {
      quality: { type: 'string', arg: 'FILE', help: 'results of bench quality', default: resultsPath('quality') },
      speed: { type: 'string', arg: 'FILE', help: 'results of bench image-speed', default: resultsPath('speed') },
      out: {
        type: 'string',
        arg: 'FILE',
        help: 'the chart, written to FILE.svg and FILE.png',
        default: path.join(PACKAGE_ROOT, 'docs', 'quality-vs-speed'),
      },
      highlight: { type: 'string', arg: 'NAME[,NAME]', help: 'networks ringed and marked as the default' },
    },
  });
  const { values } = cli;
  const quality = await readResults(values.quality);
  const speed = await readResults(values.speed);
  const photos = (quality as { settings?: { photos?: { name: string }[] } }).settings?.photos?.length ?? 0;
  const points = joinResults(quality, speed);
  const svg = renderChart(points, {
    title: 'Super-resolution quality against speed (ONNX Runtime, CPU)',
    subtitle: `UpscalerJS ESRGAN weights. PSNR: mean of ${photos} bicubic-downscaled photos. Speed: ${speedLine(speed)}`,
    ...(values.highlight === undefined ? {} : { highlight: splitList(values.highlight) }),
  });
  await writeChart(values.out, svg);
  await cli.done({ data: { points } });
}

// Only when run as a script, so the rendering can be imported by a test and by bench/inference/quality.ts.
if (process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]))) await main();
