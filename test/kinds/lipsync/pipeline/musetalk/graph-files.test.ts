/**
 * The MuseTalk manifest (src/kinds/lipsync/pipeline/musetalk/manifest.ts) and getting the graphs ready
 * (graph-files.ts): the committed musetalk-test manifest matches what the generator builds, its
 * graphs are generated on first use and verified, a file that differs is refused, and a manifest
 * that lies or is broken is refused with the field named.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { testMuseTalkManifest } from '../../../../../scripts/make-test-musetalk-model.js';
import {
  ensureMuseTalkGraphs,
  MUSETALK_GRAPHS,
  MUSETALK_TEST_MODEL,
  museTalkGraphDir,
  museTalkManifestPath,
  parseMuseTalkManifest,
  readMuseTalkManifest,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';

const MODELS = fileURLToPath(new URL('../../../../../models/', import.meta.url));
const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'musetalk-files-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('the musetalk-test manifest', () => {
  it('is committed, parses, and matches the generator byte for byte', async () => {
    const committed = await readMuseTalkManifest(MODELS, MUSETALK_TEST_MODEL);
    expect(committed).toEqual(testMuseTalkManifest());
    expect(committed.testModel).toBe(true);
    expect(committed.commercialUse.allowed).toBe(true);
  });

  it('generates missing graphs on first use into the files folder, then verifies them', async () => {
    const models = tempDir();
    const files = tempDir();
    mkdirSync(path.dirname(museTalkManifestPath(models, MUSETALK_TEST_MODEL)), { recursive: true });
    cpSync(museTalkManifestPath(MODELS, MUSETALK_TEST_MODEL), museTalkManifestPath(models, MUSETALK_TEST_MODEL));
    const manifest = await readMuseTalkManifest(models, MUSETALK_TEST_MODEL);
    const paths = await ensureMuseTalkGraphs(manifest, files);
    expect(Object.keys(paths).sort()).toEqual([...MUSETALK_GRAPHS].sort());
    for (const g of MUSETALK_GRAPHS)
      expect(paths[g]).toBe(path.join(museTalkGraphDir(files, MUSETALK_TEST_MODEL), `${g}.onnx`));
    // A file changed after it was written is refused, naming it.
    const unet = readFileSync(paths.unet);
    unet[unet.length - 1] = unet[unet.length - 1]! ^ 1;
    writeFileSync(paths.unet, unet);
    await expect(ensureMuseTalkGraphs(manifest, files)).rejects.toThrow(
      /unet.onnx to have sha256 .* refusing to load it/,
    );
    writeFileSync(paths.unet, unet.subarray(1));
    await expect(ensureMuseTalkGraphs(manifest, files)).rejects.toThrow(/unet.onnx to be \d+ bytes/);
  });

  it('says how to install an installed network whose graph is missing', async () => {
    const manifest = {
      ...testMuseTalkManifest(),
      name: 'musetalk',
      testModel: false,
      source: { kind: 'installed' as const, instructions: 'run scripts/install-musetalk-model.ts' },
    };
    await expect(ensureMuseTalkGraphs(manifest, tempDir())).rejects.toThrow(
      /whisper_encoder graph at .* is missing: run scripts\/install-musetalk-model.ts/,
    );
  });

  it('refuses a broken manifest with the field named, and a path in a file name', async () => {
    const good = testMuseTalkManifest();
    expect(() =>
      parseMuseTalkManifest(
        { ...good, graphs: { ...good.graphs, unet: { ...good.graphs.unet, file: '../../etc/passwd' } } },
        'x.json',
      ),
    ).toThrow(/graphs.unet.file: Expected a plain file name/);
    expect(() => parseMuseTalkManifest({ ...good, licences: [] }, 'x.json')).toThrow(/licences/);
    const models = tempDir();
    mkdirSync(path.join(models, 'musetalk'));
    writeFileSync(museTalkManifestPath(models, 'other'), JSON.stringify(good));
    await expect(readMuseTalkManifest(models, 'other')).rejects.toThrow(/to describe other but it names musetalk-test/);
    writeFileSync(museTalkManifestPath(models, 'broken'), '{');
    await expect(readMuseTalkManifest(models, 'broken')).rejects.toThrow(/does not parse/);
    await expect(readMuseTalkManifest(models, 'absent')).rejects.toThrow(/cannot be read \(ENOENT\)/);
  });
});
