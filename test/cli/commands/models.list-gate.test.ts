/**
 * `media-worker models list` through the built command line (dist/), in a temporary
 * MEDIA_WORKER_MODELS_DIR holding the shipped compact network's manifest and a hand-made int8
 * variant of it with a precision gate (bench/inference/precision-gate.ts): the variant's line is
 * followed by one line of its figures, the float32 network's is not, and --json carries the gate.
 */
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { formatManifest, parseManifest, type PrecisionGate } from '../../../src/inference/index.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { runCli } from '../../helpers/cli.js';

const gate: PrecisionGate = {
  psnrMinDb: 36.74,
  psnrMeanDb: 38.31,
  sharpnessRatio: 0.981,
  colourDeltaE: 0.4,
  colourToleranceDeltaE: 1.1,
  tiledMaxDiff: 1,
  speedVsFloat32: 1.83,
  passes: false,
  inputs: ['photo:astronaut 128x128', 'frame:Megamind@2s 128x128'],
  measured: '2026-12-07 05:31 UTC; test',
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'models-list-gate-'));
  await copyFile(path.join(PACKAGE_ROOT, 'models', 'realesrgan-x4fast.json'), path.join(dir, 'realesrgan-x4fast.json'));
  const base = JSON.parse(
    await readFile(path.join(PACKAGE_ROOT, 'models', 'realesrgan-x4fast.json'), 'utf8'),
  ) as Record<string, unknown>;
  const variant = parseManifest(
    {
      ...base,
      name: 'realesrgan-x4fast-int8',
      file: 'realesrgan-x4fast-int8.onnx',
      source: {
        kind: 'int8',
        of: 'realesrgan-x4fast',
        calibration: { file: 'calibration/realesrgan-x4fast-int8.json', sha256: '0'.repeat(64) },
      },
      halfPrecision: undefined,
      int8: undefined,
      gate,
    },
    'test',
  );
  await writeFile(path.join(dir, 'realesrgan-x4fast-int8.json'), formatManifest(variant));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const env = (): NodeJS.ProcessEnv => ({
  ...process.env,
  LOG_LEVEL: 'warn',
  MEDIA_WORKER_MODELS_DIR: dir,
  MEDIA_WORKER_MODEL_FILES_DIR: dir,
});

it("prints a variant's gate figures on the line after it, and nothing more for its float32 network", async () => {
  const run = await runCli(['models', 'list'], { env: env() });
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout.split('\n')).toEqual([
    `realesrgan-x4fast-int8   super-resolution   x4   BSD-3-Clause                 may be sold: yes      realesrgan-x4fast-int8.onnx  missing (made on first use)`,
    '  int8 of realesrgan-x4fast: PSNR min 36.7 dB (gate 40), mean 38.3; ΔE 0.40 (tolerance 1.10), sharpness 0.98, tiled 1/255, 1.8x float32: not offered by default',
    `realesrgan-x4fast        super-resolution   x4   BSD-3-Clause                 may be sold: yes      realesrgan-x4fast.onnx       missing (made on first use)`,
    '',
  ]);
});

it('--json carries the gate as the manifest holds it', async () => {
  const run = await runCli(['models', 'list', '--json'], { env: env() });
  expect(run.code, run.stderr).toBe(0);
  const listed = JSON.parse(run.stdout) as { name: string; gate?: PrecisionGate }[];
  expect(listed.map((m) => [m.name, m.gate])).toEqual([
    ['realesrgan-x4fast-int8', gate],
    ['realesrgan-x4fast', undefined],
  ]);
});
