/**
 * What the benchmark scripts share: the photos they run on, the machine they ran on, decoding and
 * cropping, timing, argument checks, and the JSON files one script writes and the chart reads.
 * Benchmarks print figures and ratios measured in one run; they never assert on timings.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import {
  defaultModelsDir,
  type RegistryOptions,
  type SuperResolutionManifest,
  listManifests,
  type RgbImage,
} from '../src/inference/index.js';
import { registryOptions } from '../src/app/index.js';
import { loadConfig } from '../src/config.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../src/paths.js';

export interface BenchPhoto {
  name: string;
  path: string;
  source: string;
}

const OPENCV_DATA = '/usr/share/doc/opencv-doc/examples/data';

/**
 * Real photos: the three bundled with the project, then three from Debian's opencv-doc that are
 * read in place when the package is installed (never copied into the project).
 */
export const BENCH_PHOTOS: readonly BenchPhoto[] = [
  {
    name: 'astronaut',
    path: path.join(BUNDLED_PHOTOS_DIR, 'astronaut.png'),
    source: 'bundled (scikit-image, public domain)',
  },
  { name: 'chelsea', path: path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png'), source: 'bundled (scikit-image, CC0)' },
  { name: 'coffee', path: path.join(BUNDLED_PHOTOS_DIR, 'coffee.png'), source: 'bundled (scikit-image, CC0)' },
  { name: 'butterfly', path: path.join(OPENCV_DATA, 'butterfly.jpg'), source: 'opencv-doc samples (JPEG)' },
  { name: 'baboon', path: path.join(OPENCV_DATA, 'baboon.jpg'), source: 'opencv-doc samples (JPEG)' },
  { name: 'fruits', path: path.join(OPENCV_DATA, 'fruits.jpg'), source: 'opencv-doc samples (JPEG)' },
];

/**
 * The photos named in `list` (names from BENCH_PHOTOS or file paths), default all; missing files
 * are left out with one line on stderr so a machine without opencv-doc still runs.
 */
export function selectPhotos(list: string | undefined): BenchPhoto[] {
  const wanted = list === undefined ? BENCH_PHOTOS.map((p) => p.name) : splitList(list);
  const chosen: BenchPhoto[] = [];
  for (const item of wanted) {
    const known = BENCH_PHOTOS.find((p) => p.name === item);
    const photo = known ?? {
      name: path.basename(item, path.extname(item)),
      path: path.resolve(item),
      source: 'given on the command line',
    };
    if (existsSync(photo.path)) chosen.push(photo);
    else console.error(`skipping ${photo.name}: ${photo.path} does not exist`);
  }
  if (chosen.length === 0)
    throw new Error(`Expected at least one photo that exists but none of ${wanted.join(', ')} do`);
  return chosen;
}

/**
 * 8-bit sRGB of a photo, centre-cropped to at most `maxSide` on each axis and then to multiples
 * of `multiple` (so it divides by every scale being measured).
 */
export async function loadRgb(file: string, maxSide = Number.POSITIVE_INFINITY, multiple = 1): Promise<RgbImage> {
  const meta = await sharp(file, { autoOrient: true }).metadata();
  const fullW = meta.autoOrient.width;
  const fullH = meta.autoOrient.height;
  const w = Math.floor(Math.min(fullW, maxSide) / multiple) * multiple;
  const h = Math.floor(Math.min(fullH, maxSide) / multiple) * multiple;
  if (w < 1 || h < 1)
    throw new RangeError(`Expected ${file} to be at least ${multiple} pixels on each side but it is ${fullW}x${fullH}`);
  const { data, info } = await sharp(file, { autoOrient: true })
    .extract({ left: Math.floor((fullW - w) / 2), top: Math.floor((fullH - h) / 2), width: w, height: h })
    .removeAlpha()
    .toColourspace('srgb')
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
    channels: 3,
  };
}

const execFileAsync = promisify(execFile);

/**
 * One frame as 8-bit RGB, decoded by ffmpeg: of a video at `seconds`, or of an image file (no
 * `seconds`), so that photos and frames go through the same decoder.
 */
export async function decodeFrame(file: string, seconds?: number): Promise<RgbImage> {
  const probe = await execFileAsync('ffprobe', [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-show_entries',
    'stream=width,height',
    '-of',
    'csv=p=0',
    file,
  ]);
  const [width, height] = probe.stdout.trim().split(',').map(Number) as [number, number];
  const at = seconds === undefined ? [] : ['-ss', String(seconds)];
  const out = await execFileAsync(
    'ffmpeg',
    ['-v', 'error', ...at, '-i', file, '-frames:v', '1', '-f', 'rawvideo', '-pix_fmt', 'rgb24', '-'],
    { encoding: 'buffer', maxBuffer: 1 << 28 },
  );
  if (out.stdout.length !== width * height * 3)
    throw new Error(
      `Expected a ${width}x${height} frame${seconds === undefined ? '' : ` at ${seconds} s`} of ${file} but ffmpeg gave ${out.stdout.length} bytes`,
    );
  return {
    data: new Uint8Array(out.stdout.buffer, out.stdout.byteOffset, out.stdout.length),
    width,
    height,
    channels: 3,
  };
}

/** Bicubic resize with libvips' cubic (Catmull-Rom) kernel, antialiased when reducing, like MATLAB's imresize. */
export async function resizeCubic(image: RgbImage, width: number, height: number): Promise<RgbImage> {
  return resizeWith('cubic', image, width, height);
}

/** Lanczos-3 resize, as Real-ESRGAN's --outscale and the fidelity benchmark bring outputs to a size. */
export async function resizeLanczos(image: RgbImage, width: number, height: number): Promise<RgbImage> {
  return resizeWith('lanczos3', image, width, height);
}

async function resizeWith(
  kernel: 'cubic' | 'lanczos3',
  image: RgbImage,
  width: number,
  height: number,
): Promise<RgbImage> {
  const { data, info } = await sharp(image.data, { raw: { width: image.width, height: image.height, channels: 3 } })
    .resize(width, height, { kernel, fit: 'fill' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
    channels: 3,
  };
}

/**
 * Where the benchmarks find networks: MEDIA_WORKER_MODELS_DIR (and MEDIA_WORKER_MODEL_FILES_DIR),
 * as the worker does, so a network adopted with `media-worker models add` runs like a shipped one.
 */
export function benchRegistry(): RegistryOptions {
  return registryOptions(loadConfig(process.env));
}

/** Where a network's file is (present or not) under benchRegistry(). */
export function modelFilePath(manifest: Pick<SuperResolutionManifest, 'file'>): string {
  const registry = benchRegistry();
  return path.join(registry.filesDir ?? registry.modelsDir ?? defaultModelsDir(), manifest.file);
}

/** Super-resolution manifests at the given scales, sorted by scale then size (slim, medium, thick). */
export async function srManifests(
  scales: readonly number[],
  names?: readonly string[],
): Promise<SuperResolutionManifest[]> {
  const order = ['slim', 'medium', 'thick'];
  const rank = (m: SuperResolutionManifest): number => {
    const i = order.findIndex((o) => m.name.includes(`-${o}-`));
    return i < 0 ? order.length : i;
  };
  const all = await listManifests(benchRegistry());
  const unknown = (names ?? []).filter((n) => !all.some((m) => m.name === n));
  if (unknown.length > 0)
    throw new Error(`Expected networks of the registry (media-worker models list) but received ${unknown.join(', ')}`);
  return all
    .filter((m): m is SuperResolutionManifest => m.task === 'super-resolution')
    .filter((m) => scales.includes(m.scale) && (names === undefined || names.includes(m.name)))
    .sort((a, b) => a.scale - b.scale || rank(a) - rank(b) || a.name.localeCompare(b.name));
}

/** Short label of a model for tables and the chart: `esrgan-thick-x4` -> `thick`. */
export function shortName(model: string): string {
  return model.replace(/^esrgan-/, '').replace(/-x\d+$/, '');
}

export interface MachineInfo {
  date: string;
  cpu: string;
  cores: number;
  loadAverage: readonly number[];
  memoryGiB: number;
  node: string;
  onnxruntime: string;
  sharp: string;
  platform: string;
}

export function machineInfo(): MachineInfo {
  return {
    date: new Date().toISOString(),
    cpu: cpuModel(),
    cores: os.availableParallelism(),
    loadAverage: os.loadavg().map((l) => Number(l.toFixed(2))),
    memoryGiB: Number((os.totalmem() / 2 ** 30).toFixed(1)),
    node: process.version,
    onnxruntime: packageVersion('onnxruntime-node'),
    sharp: packageVersion('sharp'),
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  };
}

export function describeMachine(m: MachineInfo): string {
  return `${m.date.slice(0, 16).replace('T', ' ')} UTC; ${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; load average at start ${m.loadAverage.join(' ')}; Node ${m.node}, onnxruntime-node ${m.onnxruntime}, sharp ${m.sharp}`;
}

function cpuModel(): string {
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    if (line !== undefined) return line.split(':')[1]?.trim() ?? 'unknown';
  } catch {
    // Not Linux: os.cpus() below says what it can.
  }
  return os.cpus()[0]?.model ?? 'unknown';
}

/** A dependency's installed version, read from its package.json (some packages do not export it). */
export function packageVersion(name: string): string {
  try {
    const json: unknown = JSON.parse(
      readFileSync(path.join(PACKAGE_ROOT, 'node_modules', name, 'package.json'), 'utf8'),
    );
    if (typeof json === 'object' && json !== null && 'version' in json && typeof json.version === 'string')
      return json.version;
  } catch {
    // Reported as unknown below.
  }
  return 'unknown';
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Timings of repeated runs. On a shared machine neighbours only ever slow a run down, so the
 * fastest run is the least disturbed estimate of the cost; the median says how noisy it was.
 */
export interface Timing {
  best: number;
  median: number;
  runs: number[];
}

export function summarise(runs: readonly number[]): Timing {
  return { best: Math.min(...runs), median: median(runs), runs: runs.map((r) => Number(r.toFixed(1))) };
}

export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** Wall time of `fn` in milliseconds, with its result. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
}

export function splitList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/** A command-line integer, worded like the rest of the project's argument errors. */
export function intOption(name: string, text: string | undefined, min = 0): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) {
    throw new RangeError(`Expected --${name} to be an integer of at least ${min} but received ${JSON.stringify(text)}`);
  }
  return n;
}

export function scalesOption(text: string | undefined): (2 | 4)[] {
  const scales = splitList(text ?? '2,4').map(Number);
  for (const s of scales) {
    if (s !== 2 && s !== 4)
      throw new RangeError(`Expected --scales to list 2 and/or 4 but received ${JSON.stringify(text)}`);
  }
  return scales as (2 | 4)[];
}

/** Where a benchmark's results go for the chart: .cache/bench/NAME.json (git ignores .cache/). */
export function resultsPath(name: string): string {
  return path.join(PACKAGE_ROOT, '.cache', 'bench', `${name}.json`);
}

export async function writeResults(file: string, results: unknown): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  console.log(`results written to ${path.relative(process.cwd(), file) || file}`);
}

export async function readResults(file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch (cause) {
    throw new Error(
      `Expected benchmark results in ${file} (run the benchmark that writes it first) but reading it failed`,
      { cause },
    );
  }
}

/** Right-aligns columns of a table for the terminal; the first column is left-aligned. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

/** A job's store for benches that time the work, not the result: the file is removed at once. */
export async function discardResult(local: string): Promise<{ url: string }> {
  await rm(local, { force: true });
  return { url: local };
}
