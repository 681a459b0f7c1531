/**
 * WORKER_PRECISION: what each setting runs on each provider, what is refused and how it is said,
 * what `auto` takes from a variant's gate and the host's probe, and the probe itself on the real
 * x4fast graphs (made by `models prepare`).
 */
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePrecision, type VariantProber } from '../../src/app/precision.js';
import { srNetworkCost } from '../../src/app/quote-policy.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import {
  choosePrecision,
  ensureModelFile,
  parseManifest,
  precisionRefusal,
  probeVariant,
  type PrecisionGate,
  type SuperResolutionManifest,
} from '../../src/inference/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { makeTempDir } from '../media/helpers.js';

const MODELS = path.join(PACKAGE_ROOT, 'models');

async function manifest(name: string, dir = MODELS): Promise<SuperResolutionManifest> {
  return parseManifest(
    JSON.parse(await readFile(path.join(dir, `${name}.json`), 'utf8')),
    name,
  ) as SuperResolutionManifest;
}

const PASSING: PrecisionGate = {
  psnrMinDb: 42,
  psnrMeanDb: 44,
  sharpnessRatio: 1,
  colourDeltaE: 0.1,
  colourToleranceDeltaE: 1,
  tiledMaxDiff: 0,
  speedVsFloat32: 2,
  passes: true,
  inputs: ['test'],
  measured: 'test',
};

describe('choosing a graph', () => {
  let base: SuperResolutionManifest;
  let variant: SuperResolutionManifest;
  beforeAll(async () => {
    base = await manifest('realesrgan-x4fast');
    variant = await manifest('realesrgan-x4fast-int8');
  });

  it('refuses what the provider cannot run, naming the variable and the way out', () => {
    expect(precisionRefusal('bf16', 'cpu')).toMatch(/^WORKER_PRECISION=bf16: no bf16 graph .* use auto, fp32 or int8/);
    expect(precisionRefusal('fp16', 'cpu')).toMatch(
      /WORKER_PRECISION=fp16 needs the cuda or tensorrt execution provider, but the start-up probe found cpu/,
    );
    expect(precisionRefusal('int8', 'cuda')).toMatch(
      /WORKER_PRECISION=int8 on a GPU needs the TensorRT execution provider .* found cuda/,
    );
    for (const [setting, provider] of [
      ['int8', 'cpu'],
      ['int8', 'tensorrt'],
      ['fp16', 'cuda'],
      ['auto', 'cuda'],
      ['auto', 'cpu'],
      ['fp32', 'webgpu'],
    ] as const) {
      expect(precisionRefusal(setting, provider), `${setting} on ${provider}`).toBeNull();
    }
  });

  it('auto on a CPU keeps float32 while the gate fails, whatever the probe says', () => {
    const failing = { ...variant, gate: { ...PASSING, psnrMinDb: 36.9, passes: false } };
    const choice = choosePrecision('auto', 'cpu', base, failing, { speedVsFloat32: 3, psnrDb: 45 });
    expect(choice).toMatchObject({ graph: 'realesrgan-x4fast', precision: 'fp32' });
    expect(choice.reason).toMatch(/int8 not offered, gate fails: lowest PSNR 36.9 dB \(floor 40\)/);
    expect(choosePrecision('auto', 'cpu', base, { ...variant, gate: undefined }).reason).toMatch(
      /no quality gate measured/,
    );
  });

  it('auto takes int8 only when the gate passes and this host finds it faster at 40 dB or more', () => {
    const passing = { ...variant, gate: PASSING };
    expect(choosePrecision('auto', 'cpu', base, passing, { speedVsFloat32: 1.7, psnrDb: 41 })).toMatchObject({
      graph: 'realesrgan-x4fast-int8',
      precision: 'int8',
    });
    expect(choosePrecision('auto', 'cpu', base, passing, { speedVsFloat32: 1.7, psnrDb: 39 }).precision).toBe('fp32');
    expect(choosePrecision('auto', 'cpu', base, passing, { speedVsFloat32: 0.9, psnrDb: 45 }).reason).toMatch(
      /not faster on this host \(0.90x\)/,
    );
    expect(choosePrecision('auto', 'cpu', base, passing).precision).toBe('fp32');
  });

  it('an explicit int8 runs the variant even below the gate (the operator chose), and says so', () => {
    const choice = choosePrecision('int8', 'cpu', base, {
      ...variant,
      gate: { ...PASSING, psnrMinDb: 36.9, passes: false },
    });
    expect(choice).toMatchObject({ graph: 'realesrgan-x4fast-int8', precision: 'int8' });
    expect(choice.reason).toMatch(/gate fails/);
    expect(choosePrecision('int8', 'cpu', base, undefined)).toMatchObject({
      precision: 'fp32',
      reason: 'no int8 variant (WORKER_PRECISION=int8)',
    });
  });

  it('a variant whose tiles leave seams never runs, even when asked for', () => {
    const seams = { ...variant, gate: { ...PASSING, tiledMaxDiff: 40 } };
    for (const setting of ['int8', 'auto'] as const) {
      const choice = choosePrecision(setting, 'cpu', base, seams, { speedVsFloat32: 2, psnrDb: 45 });
      expect(choice.precision, setting).toBe('fp32');
      expect(choice.reason).toMatch(/tiles differ from one whole tile by 40\/255 at overlap 34/);
    }
  });

  it('auto on a GPU and fp16 take the float16 variant; fp32 takes float32 everywhere', () => {
    expect(choosePrecision('auto', 'cuda', base, variant)).toMatchObject({
      graph: 'realesrgan-x4fast-fp16',
      precision: 'fp16',
    });
    expect(choosePrecision('fp16', 'tensorrt', base, variant).graph).toBe('realesrgan-x4fast-fp16');
    expect(choosePrecision('fp32', 'cuda', base, variant).graph).toBe('realesrgan-x4fast');
  });
});

describe('resolvePrecision on a host', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ dir, cleanup } = await makeTempDir('precision'));
    await mkdir(path.join(dir, 'calibration'));
    for (const name of ['realesrgan-x4fast', 'realesrgan-x4plus', 'realesrgan-x4fast-int8', 'realesrgan-x4plus-int8'])
      await copyFile(path.join(MODELS, `${name}.json`), path.join(dir, `${name}.json`));
    // The gate of x4fast's variant forged to pass: what auto does then is the question.
    const forged = await manifest('realesrgan-x4fast-int8', dir);
    await writeFile(path.join(dir, 'realesrgan-x4fast-int8.json'), JSON.stringify({ ...forged, gate: PASSING }));
  });
  afterAll(async () => cleanup());

  const config = (env: Record<string, string>) => loadConfig({ MEDIA_WORKER_MODELS_DIR: dir, ...env });
  const probed: Array<[string, number]> = [];
  const prober =
    (speedVsFloat32: number, psnrDb: number): VariantProber =>
    (base, variant, _config, threads) => {
      probed.push([variant.name, threads]);
      return Promise.resolve({ speedVsFloat32, psnrDb });
    };

  it('auto on a CPU probes only the variant whose gate passes, and points the choices at it', async () => {
    probed.length = 0;
    const { config: resolved, report } = await resolvePrecision(config({}), 'cpu', 2, prober(1.8, 42));
    expect(probed).toEqual([['realesrgan-x4fast-int8', 2]]);
    expect(resolved.srModels).toMatchObject({
      image: 'realesrgan-x4plus',
      video: 'realesrgan-x4fast-int8',
      mouth: 'realesrgan-x4fast-int8',
    });
    expect(report.requested).toBe('auto');
    expect(report.networks.map((n) => [n.network, n.precision])).toEqual([
      ['realesrgan-x4plus', 'fp32'],
      ['realesrgan-x4fast', 'int8'],
    ]);
    // The estimate counts the variant's multiply-adds at its measured speed.
    const [float32, int8] = await Promise.all([
      srNetworkCost('realesrgan-x4fast', resolved),
      srNetworkCost('realesrgan-x4fast-int8', resolved),
    ]);
    expect(int8.macsPerInputPixel).toBeCloseTo(float32.macsPerInputPixel / PASSING.speedVsFloat32, 3);
  });

  it('auto keeps float32 where this host measures less than 40 dB', async () => {
    const { config: resolved } = await resolvePrecision(config({}), 'cpu', 2, prober(1.8, 38));
    expect(resolved.srModels['video']).toBe('realesrgan-x4fast');
  });

  it('fp32 and int8 need no probe; bf16, and int8 on CUDA alone, stop the start with a ConfigError', async () => {
    probed.length = 0;
    expect(
      (await resolvePrecision(config({ WORKER_PRECISION: 'fp32' }), 'cpu', 2, prober(9, 99))).config.srModels['video'],
    ).toBe('realesrgan-x4fast');
    const int8 = await resolvePrecision(config({ WORKER_PRECISION: 'int8' }), 'cpu', 2, prober(9, 99));
    // x4plus's int8 graph leaves seams at its overlap (its gate says so): it stays float32.
    expect(int8.config.srModels).toMatchObject({ image: 'realesrgan-x4plus', video: 'realesrgan-x4fast-int8' });
    expect(int8.report.networks.find((n) => n.network === 'realesrgan-x4plus')?.reason).toMatch(/tiles differ/);
    expect(probed).toEqual([]);
    await expect(resolvePrecision(config({ WORKER_PRECISION: 'bf16' }), 'cpu', 2)).rejects.toThrow(ConfigError);
    await expect(resolvePrecision(config({ WORKER_PRECISION: 'int8' }), 'cuda', 2)).rejects.toThrow(/TensorRT/);
  });

  it('the daemon refuses to start on a precision it cannot run, saying why', () => {
    const started = spawnSync(process.execPath, [path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'), 'serve'], {
      env: { ...process.env, WORKER_PRECISION: 'bf16', NATS_URL: 'nats://127.0.0.1:1' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(started.status).toBe(1);
    expect(started.stderr + started.stdout).toMatch(/WORKER_PRECISION=bf16: no bf16 graph is shipped/);
  });

  it('an int8 graph named in MEDIA_WORKER_SR_MODELS is reported as int8, and refused where the provider cannot run it', async () => {
    const named = await resolvePrecision(
      config({ MEDIA_WORKER_SR_MODELS: 'video=realesrgan-x4fast-int8', WORKER_PRECISION: 'fp32' }),
      'cpu',
      2,
      prober(9, 99),
    );
    expect(named.report.networks).toContainEqual({
      network: 'realesrgan-x4fast',
      graph: 'realesrgan-x4fast-int8',
      precision: 'int8',
      reason: 'named in MEDIA_WORKER_SR_MODELS',
    });
    await expect(
      resolvePrecision(config({ MEDIA_WORKER_SR_MODELS: 'video=realesrgan-x4fast-int8' }), 'cuda', 2),
    ).rejects.toThrow(/TensorRT .*MEDIA_WORKER_SR_MODELS names realesrgan-x4fast-int8/);
  });

  it('a setting that is no precision is refused by the settings, naming the variable', () => {
    expect(() => config({ WORKER_PRECISION: 'int4' })).toThrow(/WORKER_PRECISION/);
  });
});

describe('the probe on this host', () => {
  it('runs float32 and int8 x4fast on the same input and measures speed and PSNR', async () => {
    const registry = { modelsDir: MODELS };
    const [float32, int8] = await Promise.all([
      ensureModelFile('realesrgan-x4fast', registry),
      ensureModelFile('realesrgan-x4fast-int8', registry),
    ]);
    const probe = await probeVariant(float32.path, int8.path, 2);
    // Timings on a shared machine: only a sanity bound (the ratios live in the benchmarks).
    expect(probe.speedVsFloat32).toBeGreaterThan(0.2);
    expect(probe.speedVsFloat32).toBeLessThan(20);
    // Really quantized (not the same graph), and still the same picture.
    expect(probe.psnrDb).toBeLessThan(99);
    expect(probe.psnrDb).toBeGreaterThan(25);
    const same = await probeVariant(float32.path, float32.path, 2);
    expect(same.psnrDb).toBe(99);
  });
});
