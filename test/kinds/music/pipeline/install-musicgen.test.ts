/**
 * The MusicGen install command with the generated test folder standing in for real weights,
 * served over http on 127.0.0.1 (private addresses allowed for the test) or copied from a folder:
 * every checksum verified, the contract checked, the folder then loads through the backend;
 * a wrong checksum or a graph without the contract installs nothing.
 */
import { createServer, type Server } from 'node:http';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installMusicgenModel, parseChecksums } from '../../../../scripts/install-musicgen-model.js';
import { sha256Hex } from '../../../../src/inference/index.js';
import { MusicgenBackend } from '../../../../src/kinds/music/pipeline/musicgen/backend.js';
import { MUSICGEN_FILES } from '../../../../src/kinds/music/pipeline/musicgen/contract.js';
import {
  buildMusicgenTestFolder,
  writeMusicgenTestFolder,
} from '../../../../src/kinds/music/pipeline/musicgen/test-model.js';

let dir: string;
let http: Server;
let baseUrl: string;
const files = buildMusicgenTestFolder().files;
const checksums = Object.entries(files)
  .map(([rel, bytes]) => `${sha256Hex(bytes)}  ${rel}`)
  .join('\n');

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'musicgen-install-'));
  http = createServer((req, res) => {
    const body = files[(req.url ?? '/').slice('/repo/'.length)];
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200).end(Buffer.from(body));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/repo/`;
});

afterAll(async () => {
  http.close();
  await rm(dir, { recursive: true, force: true });
});

describe('install-musicgen-model', () => {
  it('downloads, verifies and installs a folder that then generates', async () => {
    const modelsDir = path.join(dir, 'models-http');
    const result = await installMusicgenModel({
      checksums,
      baseUrl,
      modelsDir,
      name: 'musicgen-small',
      fetch: { allowHttp: true, allowPrivate: true },
    });
    expect(result).toEqual({ dir: path.join(modelsDir, 'musicgen-small'), files: 6 });
    const manifest = JSON.parse(await readFile(path.join(result.dir, 'media-worker-model.json'), 'utf8')) as {
      licence: { spdx: string };
      files: Record<string, { sha256: string }>;
    };
    expect(manifest.licence.spdx).toBe('CC-BY-NC-4.0');
    expect(manifest.files[MUSICGEN_FILES.decoder]?.sha256).toBe(sha256Hex(files[MUSICGEN_FILES.decoder] as Uint8Array));
    // CC-BY-NC-4.0: ready for a person's own use (a one-off command), not for a paid service.
    expect(await new MusicgenBackend({ dir: result.dir }).readiness()).toMatchObject({
      ready: false,
      reason: expect.stringContaining('forbids commercial use'),
    });
    const backend = new MusicgenBackend({ dir: result.dir, allowNoncommercial: true });
    expect(await backend.readiness()).toEqual({ ready: true });
    const songs = await backend.generate(
      { mode: 'simple', description: 'piano', instrumental: true, negativeTags: [], songs: 2, seconds: 0.1, seed: 1 },
      {
        dir,
        signal: new AbortController().signal,
        logger: (await import('pino')).pino({ level: 'silent' }),
        onProgress: () => undefined,
      },
    );
    expect(songs).toHaveLength(2);
    await backend.release();
    expect((await readdir(modelsDir)).sort()).toEqual(['musicgen-small']);
  });

  it('refuses a file whose checksum differs, and installs nothing', async () => {
    const modelsDir = path.join(dir, 'models-bad');
    const wrong = checksums.replace(/^[0-9a-f]{64}(?=  onnx\/encodec_decode\.onnx)/m, '0'.repeat(64));
    await expect(
      installMusicgenModel({ checksums: wrong, baseUrl, modelsDir, fetch: { allowHttp: true, allowPrivate: true } }),
    ).rejects.toThrow(/onnx\/encodec_decode\.onnx has sha256 [0-9a-f]{64} but 0{64} was expected/);
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it("refuses graphs without the contract (the audio decoder in the text encoder's place)", async () => {
    const source = path.join(dir, 'source');
    await writeMusicgenTestFolder(source);
    const swapped = path.join(dir, 'swapped');
    await writeMusicgenTestFolder(swapped);
    await rm(path.join(swapped, MUSICGEN_FILES.textEncoder));
    const { copyFile } = await import('node:fs/promises');
    await copyFile(path.join(source, MUSICGEN_FILES.audioDecoder), path.join(swapped, MUSICGEN_FILES.textEncoder));
    const sums = checksums.replace(
      sha256Hex(files[MUSICGEN_FILES.textEncoder] as Uint8Array),
      sha256Hex(files[MUSICGEN_FILES.audioDecoder] as Uint8Array),
    );
    const modelsDir = path.join(dir, 'models-swapped');
    await expect(installMusicgenModel({ checksums: sums, from: swapped, modelsDir })).rejects.toThrow(
      "The files do not have MusicGen's ONNX contract: Expected onnx/text_encoder.onnx to have input_ids, attention_mask, last_hidden_state",
    );
    expect(await readdir(modelsDir)).toEqual([]);
  });

  it('parses sha256sum lines and insists on the required files', () => {
    expect(parseChecksums(checksums).size).toBe(6);
    expect(() => parseChecksums(`${'a'.repeat(64)}  config.json`)).toThrow(
      'Expected the checksums to list onnx/text_encoder.onnx',
    );
    expect(() => parseChecksums(`${'a'.repeat(64)}  ../etc/passwd\n`)).toThrow('relative path inside the model folder');
  });
});
