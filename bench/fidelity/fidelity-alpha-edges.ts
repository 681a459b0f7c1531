/**
 * Hard alpha edges (issue 40), measured the way the issue asks: each disc of
 * bench/fidelity/fidelity-corpus-alpha.ts through the built command line (`upscale-image`, default network
 * unless --model), the visible error on the output's edge pixels, and each result composited over
 * white and over black into --keep DIR for looking at. `--before DIR` runs another build's command
 * line (a package root with dist/, e.g. main's) on the same files first, for the figures before.
 *
 *   npm run bench:fidelity-alpha-edges -- [--before /work/main] [--factor 2] [--model NAME] [--keep DIR]
 *
 * `--opaque-cost` times the pipeline on opaque images (an RGB photo and the same photo as opaque
 * RGBA) with the fill on and off, alternating in one run, and prints the ratio of the medians, and
 * the fill's own step timed alone (wall and CPU ratios on a shared machine move by a few percent
 * between identical runs: the RGB row, whose code does not change, shows by how much).
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { SessionCache, createSrModelLoader } from '../../src/inference/index.js';
import { probeImage } from '../../src/media/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { fillTransparent, upscaleImageFile } from '../../src/kinds/image-upscale/pipeline/index.js';
import { describeMachine, formatTable, intOption, machineInfo, median } from '../common.js';
import { composite, edgeError, makeHardEdgeCases } from './fidelity-corpus-alpha.js';
import type { DocTable } from '../doc-block.js';
import { benchCli } from '../harness.js';

const run = promisify(execFile);

async function upscaleWith(root: string, input: string, output: string, factor: string, model?: string): Promise<void> {
  const cli = path.join(root, 'dist', 'src', 'cli.js');
  await run(
    process.execPath,
    [cli, 'upscale-image', input, '--factor', factor, '-o', output, ...(model === undefined ? [] : ['--model', model])],
    {
      env: { ...process.env, LOG_LEVEL: 'warn' },
      maxBuffer: 1 << 24,
    },
  );
}

async function edges(opts: { before?: string; factor: string; model?: string; keep?: string }): Promise<DocTable> {
  const dir = await mkdtemp(path.join(tmpdir(), 'media-worker-alpha-edges-'));
  try {
    if (opts.keep !== undefined) await mkdir(opts.keep, { recursive: true });
    const cases = await makeHardEdgeCases(dir);
    const builds: [string, string][] = [
      ...(opts.before === undefined ? [] : [['before', opts.before] as [string, string]]),
      ['after', PACKAGE_ROOT],
    ];
    const rows: string[][] = [];
    for (const c of cases) {
      for (const [label, root] of builds) {
        const output = path.join(dir, `${label}-${path.basename(c.file)}`);
        const started = performance.now();
        await upscaleWith(root, c.file, output, opts.factor, opts.model);
        const ms = performance.now() - started;
        const e = await edgeError(output, c.colour);
        rows.push([c.name, label, String(e.pixels), e.mean.toFixed(1), e.max.toFixed(0), `${Math.round(ms)} ms`]);
        if (opts.keep !== undefined) {
          const stem = path.join(opts.keep, `${c.name}-${label}`);
          await composite(output, [255, 255, 255], `${stem}-over-white.png`);
          await composite(output, [0, 0, 0], `${stem}-over-black.png`);
        }
      }
    }
    const caption = `upscale-image --factor ${opts.factor}${opts.model === undefined ? ' (default network)' : ` --model ${opts.model}`}`;
    const header = ['case', 'build', 'edge px', 'mean', 'max', 'wall (CLI)'];
    console.log(caption);
    console.log(formatTable(header, rows));
    return { caption, header, rows };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function opaqueCost(opts: { model?: string; rounds: number }): Promise<DocTable> {
  const dir = await mkdtemp(path.join(tmpdir(), 'media-worker-opaque-cost-'));
  const sessions = new SessionCache({ executionProviders: ['cpu'] });
  try {
    const loadModel = createSrModelLoader({ sessions });
    const photo = path.join(PACKAGE_ROOT, 'test', 'fixtures', 'photos', 'coffee.png');
    const rgb = path.join(dir, 'opaque-rgb.png');
    const rgba = path.join(dir, 'opaque-rgba.png');
    await sharp(photo).resize(192, 128).removeAlpha().png().toFile(rgb);
    await sharp(photo).resize(192, 128).removeAlpha().ensureAlpha(1).png().toFile(rgba);
    const rows: string[][] = [];
    for (const file of [rgb, rgba]) {
      const info = await probeImage(file);
      const wall: Record<'on' | 'off', number[]> = { on: [], off: [] };
      const cpu: Record<'on' | 'off', number[]> = { on: [], off: [] };
      const once = async (fill: boolean): Promise<void> => {
        const started = performance.now();
        const cpuBefore = process.cpuUsage();
        await upscaleImageFile(
          {
            inputPath: file,
            outputPath: path.join(dir, `out-${fill}.png`),
            factor: '2',
            info,
            transparentFill: fill,
            ...(opts.model === undefined ? {} : { modelName: opts.model }),
          },
          loadModel,
        );
        // CPU time of every thread of this process (the network's, libvips's): less moved by other work on the machine than wall time.
        const used = process.cpuUsage(cpuBefore);
        wall[fill ? 'on' : 'off'].push(performance.now() - started);
        cpu[fill ? 'on' : 'off'].push((used.user + used.system) / 1000);
      };
      await once(true); // warm-up: the session loads once
      wall.on = [];
      cpu.on = [];
      for (let r = 0; r < opts.rounds; r++) {
        // Alternating, each order half the time, so drift on a shared machine falls on both.
        for (const fill of r % 2 === 0 ? [true, false] : [false, true]) await once(fill);
      }
      const ratio = (t: typeof wall): string =>
        `${(median(t.on) / median(t.off)).toFixed(3)} (${median(t.on).toFixed(0)} / ${median(t.off).toFixed(0)} ms)`;
      const step = await fillStepMs(file);
      rows.push([
        path.basename(file),
        `${info.width}x${info.height}`,
        ratio(wall),
        ratio(cpu),
        `${step.toFixed(2)} ms = ${((100 * step) / median(wall.off)).toFixed(3)} %`,
      ]);
    }
    const caption = `opaque images x2, ${opts.model ?? 'default network'}, median of ${opts.rounds} runs each, fill on and off alternating`;
    const header = [
      'image',
      'size',
      'wall, on / off',
      'CPU, on / off',
      'the fill step alone (share of wall, fill off)',
    ];
    console.log(caption);
    console.log(formatTable(header, rows));
    return { caption, header, rows };
  } finally {
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * What the fill adds to an opaque image, timed alone (median of 25): the alpha band decoded at the
 * input's size (as image-pipeline.ts does it) and fillTransparent's scan, which finds no fully
 * transparent pixel and returns. An image without alpha does neither: 0.
 */
async function fillStepMs(file: string): Promise<number> {
  const meta = await sharp(file).metadata();
  if (meta.hasAlpha !== true) return 0;
  const colour = {
    data: new Uint8Array(meta.width * meta.height * 3),
    width: meta.width,
    height: meta.height,
    channels: 3 as const,
  };
  const times: number[] = [];
  for (let r = 0; r < 25; r++) {
    const started = performance.now();
    const alpha = await sharp(file).toColourspace('srgb').extractChannel('alpha').raw().toBuffer();
    fillTransparent(colour, alpha, 255);
    times.push(performance.now() - started);
  }
  return median(times);
}

const cli = benchCli({
  name: 'fidelity-alpha-edges',
  notes:
    'Without --opaque-cost: each hard-edge disc through the built command line, the visible error on its edge pixels (mean, max levels).',
  options: {
    before: {
      type: 'string',
      arg: 'ROOT',
      help: "another build's package root (with dist/, e.g. main's): its figures first, on the same files",
    },
    factor: { type: 'string', arg: 'N', help: 'upscale factor', default: '2' },
    keep: { type: 'string', arg: 'DIR', help: 'keep each result composited over white and over black here' },
    'opaque-cost': { type: 'boolean', help: 'time opaque images with the fill on and off instead (ratio of medians)' },
  },
  common: {
    model: { help: 'the network (default: the default image network)' },
    repeat: { default: '10', help: 'with --opaque-cost: runs of each, fill on and off alternating' },
  },
});
const values = cli.values;
console.log(describeMachine(machineInfo()));
const model = values.model === undefined ? {} : { model: values.model };
const table = values['opaque-cost']
  ? await opaqueCost({ rounds: intOption('repeat', values.repeat, 1) ?? 10, ...model })
  : await edges({
      factor: values.factor,
      ...(values.before === undefined ? {} : { before: path.resolve(values.before) }),
      ...model,
      ...(values.keep === undefined ? {} : { keep: path.resolve(values.keep) }),
    });
await cli.done({ tables: [table] });
