/**
 * scripts/install-musetalk-model.ts on an export folder made of the generated graphs: installs
 * them with their checksums and licences where the worker reads them; refuses (installing
 * nothing) a checksum that differs, a file missing from SHA256SUMS, a graph without the contract,
 * and a SHA256SUMS line that tries a path.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { installMuseTalkModel, parseSha256Sums } from '../../../../../scripts/install-musetalk-model.js';
import {
  buildMuseTalkTestNetworks,
  ensureMuseTalkGraphs,
  MUSETALK_GRAPHS,
  museTalkManifestPath,
  readMuseTalkManifest,
  type MuseTalkGraph,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'musetalk-install-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const built = buildMuseTalkTestNetworks();
const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

function exportFolder(
  files: Partial<Record<MuseTalkGraph, Uint8Array>> = {},
  sums?: (line: string, graph: MuseTalkGraph) => string,
): string {
  const dir = tempDir();
  const lines: string[] = [];
  for (const g of MUSETALK_GRAPHS) {
    const bytes = files[g] ?? built[g];
    writeFileSync(path.join(dir, `${g}.onnx`), bytes);
    const line = `${sha(bytes)}  ${g}.onnx`;
    lines.push(sums === undefined ? line : sums(line, g));
  }
  writeFileSync(path.join(dir, 'SHA256SUMS'), `${lines.join('\n')}\n`);
  return dir;
}

describe('install-musetalk-model', () => {
  it('installs checked graphs with their licences where the worker loads them', async () => {
    const models = tempDir();
    const files = tempDir();
    const { manifest, manifestPath } = await installMuseTalkModel({
      from: exportFolder(),
      modelsDir: models,
      filesDir: files,
    });
    expect(manifestPath).toBe(museTalkManifestPath(models, 'musetalk'));
    const read = await readMuseTalkManifest(models, 'musetalk');
    expect(read).toEqual(manifest);
    expect(read.testModel).toBe(false);
    expect(read.commercialUse.allowed).toBe(true);
    expect(read.licences.map((l) => l.spdx)).toEqual(['MIT', 'MIT', 'MIT']);
    expect(read.licences[0]!.terms).toMatch(/any purpose, even commercially/);
    for (const g of MUSETALK_GRAPHS) expect(read.graphs[g].sha256).toBe(sha(built[g]));
    const paths = await ensureMuseTalkGraphs(read, files);
    expect(existsSync(paths.unet)).toBe(true);
    // Installing again replaces the folder and leaves no staging folders behind.
    await installMuseTalkModel({ from: exportFolder(), modelsDir: models, filesDir: files });
    expect(readdirSync(path.join(files, 'musetalk'))).toEqual(['musetalk']);
  });

  it.each<[string, () => string, RegExp]>([
    [
      'a checksum that differs',
      () => exportFolder({}, (line, g) => (g === 'unet' ? `${'0'.repeat(64)}  unet.onnx` : line)),
      /unet.onnx has sha256 \w+ but .* says 0{64}: refusing/,
    ],
    [
      'a graph missing from SHA256SUMS',
      () => exportFolder({}, (line, g) => (g === 'vae_decoder' ? '' : line)),
      /to list vae_decoder.onnx but it does not/,
    ],
    [
      'a graph without the contract',
      () => exportFolder({ unet: built.vae_encoder }),
      /Expected MuseTalk's unet graph interface but unet: no input named sample/,
    ],
    [
      'bytes that are no graph',
      () => exportFolder({ positional_encoding: new Uint8Array([1, 2, 3]) }),
      /positional_encoding.onnx to be an ONNX graph that ONNX Runtime opens/,
    ],
  ])('refuses %s and installs nothing', async (_what, makeFolder, message) => {
    const models = tempDir();
    const files = tempDir();
    await expect(installMuseTalkModel({ from: makeFolder(), modelsDir: models, filesDir: files })).rejects.toThrow(
      message,
    );
    expect(readdirSync(models)).toEqual([]);
    expect(readdirSync(files)).toEqual([]);
  });

  it('reads sha256sum lines and refuses one naming a path', () => {
    const hex = 'a'.repeat(64);
    expect([...parseSha256Sums(`${hex}  unet.onnx\n${hex} *vae_decoder.onnx\n\n# note\n`)]).toEqual([
      ['unet.onnx', hex],
      ['vae_decoder.onnx', hex],
    ]);
    expect(() => parseSha256Sums(`${hex}  ../unet.onnx`)).toThrow(/line 1 to read/);
  });
});
