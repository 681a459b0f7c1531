/**
 * The engines side by side, one run (issue 48): for each Real-ESRGAN network, on one crop of a
 * bundled photo, with the same threads,
 *
 * - ours fp32: the worker's own session code (src/inference/session.ts, onnxruntime-node on a
 *   worker thread), the network alone;
 * - ours on each reduced-precision variant: the manifests NETWORK-int8 and NETWORK-bf16 when their
 *   files are prepared ("not prepared" otherwise), and any graph given with --variant;
 * - raw ONNX Runtime from Python on the same graphs (intra_op_num_threads = --threads, its defaults
 *   otherwise);
 * - the PyTorch reference: basicsr's RRDBNet / SRVGGNetCompact with the weights recovered from our
 *   graph, folds undone, run as Real-ESRGAN's engine runs it (torch.set_num_threads, inference_mode).
 *
 * The Python engines live in engines_reference.py beside this file, one process per network,
 * driven over stdin so that every engine's runs interleave in rounds (the order rotated each
 * round): load on a shared machine hits all of them alike. It runs in a Python environment the
 * bench makes on first use in .cache/bench-python/ (printed as it installs), or in --python's.
 *
 * Printed: the CPU and its vector flags, the versions, and per engine the median and min seconds,
 * the speed-ups against PyTorch fp32 and ours fp32 (of medians and of mins), and the PSNR of its
 * output against ours fp32 (so a fast wrong engine cannot hide). Ratios, never assertions.
 *
 *   media-worker bench engines --help
 */
import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import {
  getManifest,
  SessionCache,
  type ModelSession,
  type SuperResolutionManifest,
} from '../../src/inference/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import {
  benchRegistry,
  describeMachine,
  formatTable,
  intOption,
  loadRgb,
  machineInfo,
  modelFilePath,
  selectPhotos,
  splitList,
} from '../common.js';
import { type DocTable, markdownTable } from '../doc-block.js';
import { benchCli } from '../harness.js';
import {
  assignVariants,
  cpuFlags,
  DEFAULT_SIZES,
  type EngineResult,
  engineRows,
  LOCAL_INDEXES,
  LOCAL_WHEELS,
  pipInstallArgs,
  psnrClamped,
  roundOrder,
  TABLE_HEADER,
  VARIANT_SUFFIXES,
  variantLabel,
} from './engines-table.js';

const PYTHON_DIR = path.join(PACKAGE_ROOT, '.cache', 'bench-python');
const REFERENCE_SCRIPT = path.join(PACKAGE_ROOT, 'bench', 'inference', 'engines_reference.py');

const cli = benchCli({
  name: 'engines',
  notes: `
Engines: ours (onnxruntime-node, the worker's session code) on fp32 and each variant; onnxruntime
from Python on the same graphs; PyTorch fp32 running basicsr's network with the weights recovered
from our graph (engines_reference.py proves it computes the same function: PSNR against ONNX
Runtime). Speed-up = the other engine's seconds / this engine's (above 1: this one is faster).
Python: made on first use in .cache/bench-python/venv (numpy, onnx, onnxruntime, torch, from the
local indexes ${LOCAL_INDEXES.join(' and ')} where they exist, else pip's default index, and a
CPU torch wheel from ${LOCAL_WHEELS} where there is one; BENCH_PIP_ARGS replaces the
index flags), or --python's interpreter.`,
  options: {
    size: {
      type: 'string',
      arg: 'PX[,PX]',
      help: `input side, one for all networks or one per --model (default ${Object.entries(DEFAULT_SIZES)
        .map(([n, s]) => `${n.replace('realesrgan-', '')} ${s}`)
        .join(', ')})`,
    },
    photo: { type: 'string', arg: 'NAME', help: 'the photo the centre crop is taken from', default: 'astronaut' },
    variant: {
      type: 'string',
      arg: 'FILE[,FILE]',
      help: 'more ONNX graphs to time as variants (each goes with the network its file name names)',
    },
    python: {
      type: 'string',
      arg: 'PATH',
      help: "a Python with torch, onnxruntime, onnx and numpy (default: the bench's own environment)",
    },
    'ours-only': { type: 'boolean', help: 'no Python engines' },
  },
  common: {
    model: { default: 'realesrgan-x4plus,realesrgan-x4fast' },
    threads: { default: '2', help: 'intra-op threads of every engine (ONNX Runtime, PyTorch)' },
    repeat: { default: '5', help: 'rounds: each engine runs once a round, after one untimed run' },
  },
});

// ---------------------------------------------------------------------------------------------
// The Python side.

/** The bench's Python, made on first use; undefined (with the reason printed) when it cannot be. */
function benchPython(): { python?: string; reason?: string } {
  if (cli.values.python !== undefined) return { python: cli.values.python };
  const venv = path.join(PYTHON_DIR, 'venv');
  const python = path.join(venv, 'bin', 'python');
  const check = (): boolean =>
    existsSync(python) &&
    spawnSync(python, ['-c', 'import numpy, onnx, onnxruntime, torch'], { stdio: 'ignore' }).status === 0;
  if (check()) return { python };
  const wheels = existsSync(LOCAL_WHEELS) ? readdirSync(LOCAL_WHEELS) : [];
  const args = pipInstallArgs(
    { indexes: LOCAL_INDEXES.filter((d) => existsSync(d)), wheels, wheelsDir: LOCAL_WHEELS },
    process.env.BENCH_PIP_ARGS,
  );
  console.error(
    `# making the bench's Python environment: python3 -m venv ${path.relative(PACKAGE_ROOT, venv)}; pip ${args.join(' ')}`,
  );
  const made = spawnSync('python3', ['-m', 'venv', venv], { stdio: ['ignore', 2, 2] });
  if (made.status !== 0)
    return { reason: `python3 -m venv failed (${made.error?.message ?? `status ${made.status}`})` };
  const pip = spawnSync(path.join(venv, 'bin', 'pip'), args, { stdio: ['ignore', 2, 2] });
  if (pip.status !== 0 || !check()) return { reason: `pip install failed (status ${pip.status}): see above` };
  const listed = spawnSync(path.join(venv, 'bin', 'pip'), ['freeze'], { encoding: 'utf8' });
  console.error(`# installed in ${path.relative(PACKAGE_ROOT, venv)}: ${listed.stdout.trim().split('\n').join(' ')}`);
  return { python };
}

interface ReferenceInfo {
  arch: string;
  torch: string;
  torch_cpu_capability: string;
  onnxruntime: string;
  psnr_pytorch_vs_ort: number | null;
  max_abs_pytorch_vs_ort: number;
  folds_undone: Record<string, unknown>;
  engines: string[];
}

/** engines_reference.py --serve: one process per network, one engine run per request. */
class PythonEngines {
  readonly #child: ChildProcessByStdio<Writable, Readable, null>;
  readonly #lines: AsyncIterator<string>;

  private constructor(child: ChildProcessByStdio<Writable, Readable, null>) {
    this.#child = child;
    this.#lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  }

  static async start(
    python: string,
    args: string[],
  ): Promise<{ engines?: PythonEngines; info?: ReferenceInfo; reason?: string }> {
    const child = spawn(python, [REFERENCE_SCRIPT, ...args, '--serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const engines = new PythonEngines(child);
    const first = await engines.#next();
    if (first === undefined || first.ok !== true) {
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
      const error =
        typeof first?.error === 'string'
          ? first.error
          : `engines_reference.py ended before it was ready (exit ${child.exitCode}; its error is above)`;
      return { reason: error };
    }
    return { engines, info: first as unknown as ReferenceInfo };
  }

  async #next(): Promise<Record<string, unknown> | undefined> {
    const line = await this.#lines.next();
    return line.done === true ? undefined : (JSON.parse(line.value) as Record<string, unknown>);
  }

  async run(engine: string): Promise<number> {
    this.#child.stdin.write(`run ${engine}\n`);
    const reply = await this.#next();
    if (typeof reply?.seconds !== 'number')
      throw new Error(`Expected seconds from engines_reference.py for ${engine} but received ${JSON.stringify(reply)}`);
    return reply.seconds;
  }

  async close(): Promise<void> {
    this.#child.stdin.end('quit\n');
    if (this.#child.exitCode === null) await new Promise((resolve) => this.#child.once('exit', resolve));
  }
}

// ---------------------------------------------------------------------------------------------

interface Variant {
  label: string;
  file: string;
}

/** The network's reduced-precision variants: prepared manifests, then --variant files; and what is missing. */
async function variantsOf(
  network: string,
  files: readonly string[],
): Promise<{ variants: Variant[]; missing: EngineResult[] }> {
  const variants: Variant[] = [];
  const missing: EngineResult[] = [];
  for (const suffix of VARIANT_SUFFIXES) {
    const name = `${network}-${suffix}`;
    let manifest: SuperResolutionManifest;
    try {
      manifest = (await getManifest(name, benchRegistry())) as SuperResolutionManifest;
    } catch {
      missing.push({ engine: `ours ${suffix}`, note: `not prepared (no manifest ${name})` });
      continue;
    }
    const file = modelFilePath(manifest);
    if (existsSync(file)) variants.push({ label: suffix, file });
    else missing.push({ engine: `ours ${suffix}`, note: `not prepared (media-worker models prepare ${name})` });
  }
  for (const file of files) variants.push({ label: variantLabel(file), file: path.resolve(file) });
  return { variants, missing };
}

function f32(buffer: Buffer): Float32Array {
  return new Float32Array(buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength));
}

async function main(): Promise<void> {
  const values = cli.values;
  const threads = intOption('threads', values.threads, 1)!;
  const rounds = intOption('repeat', values.repeat, 1)!;
  const networks = splitList(values.model);
  const sizes = values.size === undefined ? [] : splitList(values.size).map((s) => intOption('size', s, 4)!);
  if (sizes.length > 1 && sizes.length !== networks.length)
    throw new RangeError(`Expected one --size or one per --model (${networks.length}) but received ${values.size}`);
  const byNetwork = assignVariants(splitList(values.variant ?? ''), networks);
  const [photo] = selectPhotos(values.photo);
  const cpu = cpuFlags(existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '');
  const machine = describeMachine(machineInfo());
  console.log(`# ${machine}`);
  console.log(
    `# CPU ${cpu.model}; flags: ${cpu.present.join(' ') || 'none of the relevant'}; absent: ${cpu.absent.join(' ')}`,
  );
  console.log(
    `# threads ${threads} for every engine; ${rounds} rounds, engines interleaved, order rotated each round, after one untimed run each`,
  );
  const py = values['ours-only'] ? { reason: '--ours-only' } : benchPython();
  if (py.reason !== undefined && !values['ours-only']) console.log(`# Python engines not run: ${py.reason}`);
  const work = await mkdtemp(path.join(tmpdir(), 'bench-engines-'));
  const rows: string[][] = [];
  const data: Record<string, unknown>[] = [];
  const versions = new Set<string>();
  const sessions = new SessionCache({ executionProviders: ['cpu'], threads });
  try {
    for (const [n, network] of networks.entries()) {
      const manifest = (await getManifest(network, benchRegistry())) as SuperResolutionManifest;
      const file = modelFilePath(manifest);
      if (!existsSync(file)) throw new Error(`Expected ${file}: run media-worker models prepare ${network}`);
      const size = sizes[sizes.length === 1 ? 0 : n] ?? DEFAULT_SIZES[network] ?? 64;
      const rgb = await loadRgb(photo!.path, size);
      const { width, height } = rgb;
      const input = new Float32Array(3 * width * height);
      for (let i = 0; i < width * height; i += 1)
        for (let c = 0; c < 3; c += 1) input[c * width * height + i] = rgb.data[i * 3 + c]!;
      const inputFile = path.join(work, `${network}-input.f32`);
      await writeFile(inputFile, input);
      const outputs = path.join(work, network);
      const { variants, missing } = await variantsOf(network, byNetwork.get(network) ?? []);
      const label = `${network} on ${photo!.name} ${width}x${height}`;
      console.log(
        `\n# ${label}: variants ${variants.map((v) => `${v.label} (${path.relative(PACKAGE_ROOT, v.file)})`).join(', ') || 'none'}${missing.length > 0 ? `; ${missing.map((m) => `${m.engine} ${m.note}`).join('; ')}` : ''}`,
      );

      // Python first (it loads torch and warms its engines up while ours is idle), then ours.
      const results = new Map<
        string,
        EngineResult & { id: string; runs: number[]; kind: 'ours' | 'python'; session?: ModelSession }
      >();
      let python: PythonEngines | undefined;
      let info: ReferenceInfo | undefined;
      let pythonReason = py.reason;
      if (py.python !== undefined) {
        const args = [
          file,
          '--threads',
          String(threads),
          '--input',
          inputFile,
          '--height',
          String(height),
          '--width',
          String(width),
          '--outputs',
          outputs,
          ...variants.flatMap((v) => ['--variant', `${v.label}=${v.file}`]),
        ];
        const started = await PythonEngines.start(py.python, args);
        python = started.engines;
        info = started.info;
        pythonReason = started.reason;
        if (info !== undefined) {
          versions.add(
            `Python onnxruntime ${info.onnxruntime}, torch ${info.torch} (CPU capability ${info.torch_cpu_capability})`,
          );
          const db = info.psnr_pytorch_vs_ort === null ? 'identical' : `${info.psnr_pytorch_vs_ort.toFixed(1)} dB`;
          console.log(
            `# PyTorch reference (basicsr ${info.arch}, folds undone: ${JSON.stringify(info.folds_undone)}) against onnxruntime on the same graph: PSNR ${db}, largest difference ${info.max_abs_pytorch_vs_ort.toPrecision(2)} of 255`,
          );
        } else console.log(`# Python engines not run for ${network}: ${pythonReason}`);
      }
      const oursFp32 = 'ours fp32';
      const oursFiles: [string, string][] = [
        [oursFp32, file],
        ...variants.map((v): [string, string] => [`ours ${v.label}`, v.file]),
      ];
      let reference: Float32Array | undefined;
      for (const [engine, graph] of oursFiles) {
        const session = await sessions.get(graph);
        const out = await session.run(input, [1, 3, height, width]);
        reference ??= out.data;
        results.set(engine, {
          id: engine,
          engine,
          runs: [],
          kind: 'ours',
          session,
          psnr: psnrClamped(out.data, reference),
        });
      }
      const pythonEngines: [string, string][] = [
        ['pytorch-fp32', info === undefined ? 'PyTorch fp32' : `PyTorch fp32 (basicsr ${info.arch})`],
        ['ort-python-fp32', 'onnxruntime Python fp32'],
        ...variants.map((v): [string, string] => [`ort-python-${v.label}`, `onnxruntime Python ${v.label}`]),
      ];
      for (const [id, engine] of pythonEngines) {
        if (python === undefined) continue;
        const out = f32(await readFile(path.join(outputs, `${id}.f32`)));
        results.set(id, { id, engine, runs: [], kind: 'python', psnr: psnrClamped(out, reference!) });
      }
      const order = [...results.values()];
      for (let r = 0; r < rounds; r += 1) {
        for (const e of roundOrder(order, r)) {
          if (e.kind === 'python') e.runs.push(await python!.run(e.id));
          else {
            const t = performance.now();
            await e.session!.run(input, [1, 3, height, width]);
            e.runs.push((performance.now() - t) / 1000);
          }
        }
        console.log(
          `# round ${r + 1}/${rounds}: ${order.map((e) => `${e.engine} ${e.runs.at(-1)!.toFixed(3)} s`).join(', ')}`,
        );
      }
      await python?.close();
      const notRun: EngineResult[] =
        python === undefined
          ? pythonEngines.map(([, engine]) => ({ engine, note: `not run: ${pythonReason ?? 'no Python'}` }))
          : [];
      const pytorchName = pythonEngines[0]![1];
      const all: EngineResult[] = [...order, ...missing, ...notRun];
      const shortNetwork = network.replace(/^realesrgan-/, '');
      const tableRows = engineRows(shortNetwork, `${width}x${height}`, all, pytorchName, oursFp32);
      rows.push(...tableRows);
      console.log(`\n${formatTable(TABLE_HEADER, tableRows)}`);
      data.push({
        network,
        photo: photo!.name,
        input: `${width}x${height}`,
        threads,
        reference: info,
        engines: all.map((e) => ({
          engine: e.engine,
          runs: e.runs,
          note: e.note,
          psnrVsOursFp32: e.psnr === undefined || Number.isFinite(e.psnr) ? e.psnr : 'identical',
        })),
      });
    }
  } finally {
    await sessions.release();
    await rm(work, { recursive: true, force: true });
  }
  const caption = `Engines side by side, ${threads} threads each, ${rounds} interleaved rounds (median and min of the timed runs):`;
  const tables: DocTable[] = [{ caption, header: TABLE_HEADER, rows }];
  console.log(`\n${caption}\n\n${markdownTable(TABLE_HEADER, rows)}\n`);
  console.log(`CPU ${cpu.model}; flags: ${cpu.present.join(' ')}; absent: ${cpu.absent.join(' ')}.`);
  console.log(`${machine}; ${[...versions].join('; ') || 'no Python engines'}.`);
  await cli.done({ tables, data: { cpu, runs: data } });
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(path.basename(process.argv[1]))) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
