import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildModel,
  encodeModel,
  floatValueInfo,
  node,
  sha256Hex,
  parseManifest,
  forgetVerifiedModels,
  SessionCache,
} from '../../../../src/inference/index.js';
import { buildWav2LipTestModel, loadLipsyncModel } from '../../../../src/kinds/lipsync/pipeline/index.js';
import { InstallError, installLipsyncModel } from '../../../../scripts/install-lipsync-model.js';
import { PACKAGE_ROOT } from '../../../../src/paths.js';

const INSTALLER = path.join(PACKAGE_ROOT, 'dist', 'scripts', 'install-lipsync-model.js');

function installer(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [INSTALLER, ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr }),
    );
  });
}

/** An ONNX graph that is not Wav2Lip: one input `x`, its identity out. */
function identityModel(): Uint8Array {
  return encodeModel(
    buildModel({
      graphName: 'identity',
      nodes: [node('Identity', ['x'], ['y'], 'identity')],
      initializers: [],
      inputs: [floatValueInfo('x', [1, 3, 8, 8])],
      outputs: [floatValueInfo('y', [1, 3, 8, 8])],
      opset: 17,
      producerName: 'test',
      producerVersion: '1',
      docString: '',
      metadata: [],
    }),
  );
}

describe('scripts/install-lipsync-model', () => {
  const weights = buildWav2LipTestModel().bytes;
  const files: Record<string, Uint8Array> = {
    '/wav2lip.onnx': weights,
    '/identity.onnx': identityModel(),
    '/garbage.onnx': new TextEncoder().encode('not a model at all'),
  };
  let server: http.Server;
  let base: string;
  let dir: string;
  const local = { allowHttp: true, allowPrivate: true };

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const body = files[req.url ?? ''];
      if (body === undefined) {
        res.writeHead(404).end();
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.byteLength })
        .end(Buffer.from(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = await mkdtemp(path.join(tmpdir(), 'install-lipsync-'));
  });

  afterAll(async () => {
    forgetVerifiedModels();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses weights whose sha256 differs, writing nothing', async () => {
    const wrong = '0'.repeat(64);
    const attempt = installLipsyncModel({ url: `${base}/wav2lip.onnx`, sha256: wrong, modelsDir: dir, fetch: local });
    await expect(attempt).rejects.toThrow(InstallError);
    await expect(attempt).rejects.toThrow(
      `Downloaded weights have sha256 ${sha256Hex(weights)} but ${wrong} was expected: refusing to install them`,
    );
    expect(await readdir(dir)).toEqual([]);
  });

  it.each([
    [
      'an https-only URL given plain http',
      {},
      'Expected to download the lip-sync weights but Expected an https URL for the model weights but received a plain http URL',
    ],
    [
      'a loopback server',
      { allowHttp: true },
      'Expected to download the lip-sync weights but Expected a public address for the model weights but received 127.0.0.1 (loopback)',
    ],
    [
      'a file over the size cap',
      { ...local },
      `Expected at most 1000 bytes for the model weights but received ${weights.byteLength} bytes`,
      1000,
    ],
  ])('refuses %s', async (_what, fetch, message, maxBytes?: number) => {
    const attempt = installLipsyncModel({
      url: `${base}/wav2lip.onnx`,
      sha256: sha256Hex(weights),
      modelsDir: dir,
      fetch,
      ...(maxBytes ? { maxBytes } : {}),
    });
    await expect(attempt).rejects.toThrow(message);
    expect(await readdir(dir)).toEqual([]);
  });

  it.each([
    [
      '/identity.onnx',
      'Expected wav2lip to take mel_spectrogram and video_frames and return y but its graph takes x and returns y',
    ],
    ['/garbage.onnx', 'Expected an ONNX model that ONNX Runtime can open but'],
  ])('refuses %s, which does not have the Wav2Lip contract', async (file, message) => {
    const bytes = files[file] as Uint8Array;
    await expect(
      installLipsyncModel({ url: `${base}${file}`, sha256: sha256Hex(bytes), modelsDir: dir, fetch: local }),
    ).rejects.toThrow(message);
    expect(await readdir(dir)).toEqual([]);
  });

  it('installs verified weights with a manifest, and lip-sync jobs then load them through the default mapping', async () => {
    const sha256 = sha256Hex(weights).toUpperCase();
    const { manifest, file, manifestPath } = await installLipsyncModel({
      url: `${base}/wav2lip.onnx`,
      sha256,
      modelsDir: dir,
      fetch: local,
    });
    expect((await readdir(dir)).sort()).toEqual(['wav2lip.json', 'wav2lip.onnx']);
    expect(file).toBe(path.join(dir, 'wav2lip.onnx'));
    expect(Buffer.from(await readFile(file)).equals(Buffer.from(weights))).toBe(true);
    const written = parseManifest(JSON.parse(await readFile(manifestPath, 'utf8')), manifestPath);
    expect(written).toEqual(manifest);
    expect(manifest).toMatchObject({
      name: 'wav2lip',
      task: 'lipsync',
      testModel: false,
      sha256: sha256.toLowerCase(),
      bytes: weights.byteLength,
      opset: 17,
      architecture: 'Wav2Lip',
      output: { name: 'output', shape: ['B', 3, 96, 96], channels: 'BGR', range: [0, 1] },
      licence: { spdx: 'LicenseRef-Wav2Lip-research' },
      source: { kind: 'external', url: `${base}/wav2lip.onnx` },
    });

    const sessions = new SessionCache({ thread: false });
    try {
      const model = await loadLipsyncModel('vendor-lipsync-2', { sessions, registry: { modelsDir: dir } });
      expect([model.name, model.testModel]).toEqual(['wav2lip', false]);
      const out = await model.run(new Float32Array(80 * 16).fill(-4), new Float32Array(6 * 96 * 96).fill(0.5), 1);
      expect(out).toHaveLength(3 * 96 * 96);
      expect(out[0]).toBeCloseTo(0.5, 6);
    } finally {
      await sessions.release();
    }
  });

  it('puts the manifest in the models directory and the weights in the files directory (a read-only install)', async () => {
    const models = await mkdtemp(path.join(dir, 'manifests-'));
    const files = await mkdtemp(path.join(dir, 'weights-'));
    await installLipsyncModel({
      url: `${base}/wav2lip.onnx`,
      sha256: sha256Hex(weights),
      modelsDir: models,
      filesDir: files,
      fetch: local,
    });
    expect(await readdir(models)).toEqual(['wav2lip.json']);
    expect(await readdir(files)).toEqual(['wav2lip.onnx']);
    forgetVerifiedModels();
    const sessions = new SessionCache({ thread: false });
    try {
      const model = await loadLipsyncModel('vendor-lipsync-3', {
        sessions,
        registry: { modelsDir: models, filesDir: files },
      });
      expect(model.name).toBe('wav2lip');
    } finally {
      await sessions.release();
    }
  });

  it("as a command: --help, and the worker's MEDIA_WORKER_MODELS_DIR / MEDIA_WORKER_MODEL_FILES_DIR by default", async () => {
    const help = await installer(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: node dist/scripts/install-lipsync-model.js --url URL --sha256 HEX');
    expect(help.stdout).toContain('MEDIA_WORKER_MODEL_FILES_DIR');

    const models = await mkdtemp(path.join(dir, 'env-manifests-'));
    const files = await mkdtemp(path.join(dir, 'env-weights-'));
    const env = {
      MEDIA_WORKER_MODELS_DIR: models,
      MEDIA_WORKER_MODEL_FILES_DIR: files,
      MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
    };
    const missing = await installer([], env);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('Expected --url URL and --sha256 HEX');
    const r = await installer(['--url', `${base}/wav2lip.onnx`, '--sha256', sha256Hex(weights)], env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(path.join(files, 'wav2lip.onnx'));
    expect(await readdir(models)).toEqual(['wav2lip.json']);
    expect(await readdir(files)).toEqual(['wav2lip.onnx']);
  });
});
