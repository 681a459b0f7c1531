/**
 * Memory one network call takes per tile input pixel, the figure the tile-size budget divides by
 * (manifest `tile.bytesPerPixel`, src/inference/tile-budget.ts). Each measurement is a child process
 * that opens the session on the CPU, runs one zero tile to warm it, notes its peak resident set,
 * then runs one tile of the measured side: the growth of the peak over the warm one, divided by the
 * tile's pixels, for two sides; the slope between them leaves out what does not grow with the tile.
 *
 *   media-worker bench tile-memory --help
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureModelFile, openSession } from '../../src/inference/index.js';
import { benchRegistry } from '../common.js';
import { benchCli } from '../harness.js';

const cli = benchCli({
  name: 'tile-memory',
  options: {
    sides: { type: 'string', arg: 'A,B', help: 'the two tile sides measured', default: '96,192' },
    child: { type: 'string', arg: 'SIDE', help: 'internal: one measurement in this process', hidden: true },
  },
  common: { model: { default: 'realesrgan-x4plus', help: 'the network (one)' } },
});
const values = cli.values;

if (values.child !== undefined) {
  const side = Number(values.child);
  const file = await ensureModelFile(values.model, benchRegistry());
  const session = await openSession(file.path, { executionProviders: ['cpu'] });
  await session.run(new Float32Array(3 * 16 * 16), [1, 3, 16, 16]);
  const before = process.resourceUsage().maxRSS;
  await session.run(new Float32Array(3 * side * side), [1, 3, side, side]);
  const after = process.resourceUsage().maxRSS;
  process.stdout.write(`${JSON.stringify({ side, growthKb: after - before })}\n`);
} else {
  const sides = values.sides.split(',').map(Number);
  const rows = sides.map((side) => {
    const child = spawnSync(
      process.execPath,
      [fileURLToPath(import.meta.url), '--model', values.model, '--child', String(side)],
      { encoding: 'utf8' },
    );
    if (child.status !== 0) throw new Error(`child for side ${side} failed: ${child.stderr}`);
    return JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '{}') as { side: number; growthKb: number };
  });
  for (const r of rows)
    process.stdout.write(
      `${values.model} side ${r.side}: peak grew ${(r.growthKb / 1024).toFixed(0)} MiB, ${((r.growthKb * 1024) / (r.side * r.side)).toFixed(0)} B/pixel\n`,
    );
  const [a, b] = [rows[0], rows.at(-1)];
  if (a !== undefined && b !== undefined && a !== b) {
    const slope = ((b.growthKb - a.growthKb) * 1024) / (b.side * b.side - a.side * a.side);
    process.stdout.write(
      `${values.model}: ${slope.toFixed(0)} bytes per tile input pixel (slope ${a.side} -> ${b.side})\n`,
    );
    await cli.done({ data: { rows, bytesPerPixel: Math.round(slope) } });
  } else {
    await cli.done({ data: { rows } });
  }
}
