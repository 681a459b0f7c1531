import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ModelManifestError, parseManifest, type ModelManifest } from '../../src/inference/manifest.js';
import {
  ensureModelFile,
  forgetVerifiedModels,
  getManifest,
  listManifests,
  ModelIntegrityError,
  ModelRegistryError,
  sha256File,
} from '../../src/inference/model-registry.js';

describe('committed manifests', () => {
  it('parse, and each names its own file, scale and 0-255 NCHW RGB contract', async () => {
    const manifests = await listManifests();
    const names = manifests.map((m) => m.name);
    for (const required of [
      'esrgan-slim-x2',
      'esrgan-slim-x4',
      'esrgan-medium-x2',
      'esrgan-medium-x4',
      'esrgan-thick-x2',
      'esrgan-thick-x4',
      'realesrgan-x4plus',
      'realesrgan-x4fast',
    ]) {
      expect(names).toContain(required);
    }
    const superResolution = manifests.filter((m) => m.task === 'super-resolution');
    expect(superResolution.length).toBeGreaterThanOrEqual(6);
    for (const m of superResolution) {
      expect(m.file).toBe(`${m.name}.onnx`);
      if (m.source.kind === 'ncnn-npm-tarball') {
        expect(m.name).toMatch(new RegExp(`^realesrgan-x${m.scale}[a-z]+$`));
        expect(m.source.param.path).toMatch(new RegExp(`/${m.name}\\.param$`));
        expect(m.licence?.spdx).toBe('BSD-3-Clause');
      } else if (m.source.kind === 'float16' || m.source.kind === 'int8') {
        // A float16 or int8 variant: the same network as the one it is made from, by name, which names it back.
        const suffix = m.source.kind === 'float16' ? 'fp16' : 'int8';
        expect(m.name).toBe(`${m.source.of}-${suffix}`);
        const of = m.source.of;
        const base = superResolution.find((b) => b.name === of);
        expect(m.source.kind === 'float16' ? base?.halfPrecision : base?.int8).toBe(m.name);
      } else {
        expect(m.name.endsWith(`-x${m.scale}`)).toBe(true);
        expect(m.source).toMatchObject({ kind: 'upscalerjs-tfjs', path: `models/x${m.scale}/model.json` });
      }
      expect([m.input.layout, m.input.channels, m.input.range]).toEqual(['NCHW', 'RGB', [0, 255]]);
      expect([m.output.name, m.output.range]).toEqual(['output', [0, 255]]);
    }
  });
});

describe('parseManifest', () => {
  let valid: ModelManifest;
  beforeEach(async () => {
    valid = await getManifest('esrgan-slim-x2');
  });

  it.each([
    ['a short sha256', { sha256: 'abc' }, 'sha256'],
    [
      'an overlap too wide for the tile',
      { tile: { size: 64, overlap: 32, batch: 1 } },
      'Expected tile overlap * 2 < tile size',
    ],
    ['an unknown task', { task: 'text-to-speech' }, 'task'],
    ['a file path with directories', { file: '../x.onnx' }, 'Expected a plain .onnx file name'],
    [
      'an NHWC layout',
      { input: { name: 'input', dtype: 'float32', layout: 'NHWC', channels: 'RGB', range: [0, 255] } },
      'layout',
    ],
  ])('refuses %s, naming the manifest', (_what, change, words) => {
    const call = () => parseManifest({ ...valid, ...change }, 'models/broken.json');
    expect(call).toThrow(ModelManifestError);
    expect(call).toThrow('Expected a valid model manifest in models/broken.json');
    expect(call).toThrow(words);
  });
});

describe('ensureModelFile', () => {
  let dir: string;
  let manifestsDir: string;
  let filesDir: string;

  async function installManifest(name: string, change: Partial<ModelManifest> = {}): Promise<ModelManifest> {
    const manifest = { ...(await getManifest(name)), ...change } as ModelManifest;
    await writeFile(path.join(manifestsDir, `${name}.json`), JSON.stringify(manifest));
    return manifest;
  }

  beforeEach(async () => {
    forgetVerifiedModels();
    dir = await mkdtemp(path.join(tmpdir(), 'registry-test-'));
    manifestsDir = path.join(dir, 'manifests');
    filesDir = path.join(dir, 'files');
    await mkdir(manifestsDir);
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('converts a missing file once (even when asked twice at once) and verifies it', async () => {
    const manifest = await installManifest('esrgan-slim-x2');
    const logged: object[] = [];
    const logger = { info: (details: object) => logged.push(details) };
    const [a, b] = await Promise.all([
      ensureModelFile('esrgan-slim-x2', { modelsDir: manifestsDir, filesDir, logger }),
      ensureModelFile('esrgan-slim-x2', { modelsDir: manifestsDir, filesDir, logger }),
    ]);
    expect(a.path).toBe(path.join(filesDir, 'esrgan-slim-x2.onnx'));
    expect(b.path).toBe(a.path);
    expect(logged).toHaveLength(1);
    expect(await sha256File(a.path)).toBe(manifest.sha256);
    // No temp file left behind by the atomic write.
    expect(await readdir(filesDir)).toEqual(['esrgan-slim-x2.onnx']);
  });

  it('refuses a file with a wrong checksum, naming the file and both hashes; verification is cached per process', async () => {
    const manifest = await installManifest('esrgan-slim-x2');
    const file = path.join(filesDir, 'esrgan-slim-x2.onnx');
    await ensureModelFile('esrgan-slim-x2', { modelsDir: manifestsDir, filesDir });

    const bytes = await readFile(file);
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 1;
    await writeFile(file, bytes);
    const tampered = await sha256File(file);

    // Already verified in this process: not hashed again.
    await expect(ensureModelFile('esrgan-slim-x2', { modelsDir: manifestsDir, filesDir })).resolves.toMatchObject({
      path: file,
    });

    forgetVerifiedModels();
    const attempt = ensureModelFile('esrgan-slim-x2', { modelsDir: manifestsDir, filesDir });
    await expect(attempt).rejects.toThrow(ModelIntegrityError);
    await expect(attempt).rejects.toThrow(
      `Model file ${file} has sha256 ${tampered} but manifest ${path.join(manifestsDir, 'esrgan-slim-x2.json')} expects ${manifest.sha256}`,
    );
    await expect(attempt).rejects.toMatchObject({ file, expectedSha256: manifest.sha256, actualSha256: tampered });
    // Failures are not cached: still refused on the next call.
    await expect(ensureModelFile('esrgan-slim-x2', { modelsDir: manifestsDir, filesDir })).rejects.toThrow(
      ModelIntegrityError,
    );
  });

  it('refuses to write a conversion whose checksum differs from the manifest', async () => {
    const wrong = 'f'.repeat(64);
    await installManifest('esrgan-slim-x4', { sha256: wrong });
    const attempt = ensureModelFile('esrgan-slim-x4', { modelsDir: manifestsDir, filesDir });
    await expect(attempt).rejects.toThrow(ModelIntegrityError);
    await expect(attempt).rejects.toThrow(
      new RegExp(
        `converted from @upscalerjs/esrgan-slim@1\\.0\\.0 has sha256 [0-9a-f]{64} but manifest .* expects ${wrong}: refusing to write ${path.join(filesDir, 'esrgan-slim-x4.onnx')}`,
      ),
    );
    await expect(readdir(filesDir).catch(() => [])).resolves.toEqual([]);
  });

  it('explains how to install a missing file that cannot be converted here', async () => {
    await installManifest('esrgan-slim-x2', {
      source: { kind: 'external', instructions: 'copy it from the release bucket' },
    });
    await expect(ensureModelFile('esrgan-slim-x2', { modelsDir: manifestsDir, filesDir })).rejects.toThrow(
      `Expected model file ${path.join(filesDir, 'esrgan-slim-x2.onnx')} for esrgan-slim-x2 but it is missing: copy it from the release bucket`,
    );
  });

  it.each([
    ['an unknown model', 'esrgan-huge-x4', 'Expected a known model (esrgan-slim-x2) but received esrgan-huge-x4'],
    [
      'a name that walks out of the directory',
      '../esrgan-slim-x2',
      'Expected a model name of lower-case letters, digits, dots and dashes but received "../esrgan-slim-x2"',
    ],
  ])('refuses %s', async (_what, name, message) => {
    await installManifest('esrgan-slim-x2');
    const attempt = ensureModelFile(name, { modelsDir: manifestsDir, filesDir });
    await expect(attempt).rejects.toThrow(ModelRegistryError);
    await expect(attempt).rejects.toThrow(message);
  });

  it('refuses a manifest whose name is not its file name', async () => {
    const manifest = await getManifest('esrgan-slim-x2');
    await writeFile(path.join(manifestsDir, 'esrgan-slim-x4.json'), JSON.stringify(manifest));
    await expect(ensureModelFile('esrgan-slim-x4', { modelsDir: manifestsDir, filesDir })).rejects.toThrow(
      `Expected model manifest ${path.join(manifestsDir, 'esrgan-slim-x4.json')} to be named esrgan-slim-x4 but it says esrgan-slim-x2`,
    );
  });
});
