/**
 * MuseTalk's graphs on their worker threads (src/kinds/lipsync/pipeline/musetalk/graph-threads.ts),
 * through `loadMuseTalk` with the musetalk-test graphs: each of the five files is opened once, on
 * its thread, never on the calling thread (the real UNet's weights were once in memory twice); a
 * graph that does not open or breaks its contract fails exactly as on the calling thread; released,
 * the threads are gone.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache, sha256Hex } from '../../../../../src/inference/index.js';
import {
  buildMuseTalkTestNetworks,
  ensureMuseTalkGraphs,
  loadMuseTalk,
  MUSETALK_GRAPHS,
  MUSETALK_TEST_MODEL,
  museTalkGraphDir,
  museTalkManifestPath,
  readMuseTalkManifest,
  releaseMuseTalkThreads,
  type MuseTalkGraph,
} from '../../../../../src/kinds/lipsync/pipeline/musetalk/index.js';
import { countOpens, failureOf } from '../open-counter.js';

const MODELS = fileURLToPath(new URL('../../../../../models/', import.meta.url));
const opens = countOpens();
const built = buildMuseTalkTestNetworks();

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'musetalk-threads-'));
});

afterAll(async () => {
  await releaseMuseTalkThreads();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A models folder of its own holding `name`: musetalk-test (its graphs generated into it on first
 * use, as on a new host), or musetalk-test's graphs installed as `name` with `graphs` in place of some.
 */
function modelsFolder(name: string, graphs: Partial<Record<MuseTalkGraph, Uint8Array>> = {}): string {
  const modelsDir = path.join(dir, name);
  mkdirSync(path.join(modelsDir, 'musetalk'), { recursive: true });
  const template = museTalkManifestPath(MODELS, MUSETALK_TEST_MODEL);
  if (name === MUSETALK_TEST_MODEL) {
    cpSync(template, museTalkManifestPath(modelsDir, name));
    return modelsDir;
  }
  const manifest = JSON.parse(readFileSync(template, 'utf8')) as {
    name: string;
    graphs: Record<MuseTalkGraph, { file: string; sha256: string; bytes: number }>;
  };
  manifest.name = name;
  const graphDir = museTalkGraphDir(modelsDir, name);
  mkdirSync(graphDir, { recursive: true });
  for (const graph of MUSETALK_GRAPHS) {
    const bytes = graphs[graph] ?? built[graph];
    Object.assign(manifest.graphs[graph], { sha256: sha256Hex(bytes), bytes: bytes.length });
    writeFileSync(path.join(graphDir, manifest.graphs[graph].file), bytes);
  }
  writeFileSync(museTalkManifestPath(modelsDir, name), JSON.stringify(manifest));
  return modelsDir;
}

describe("MuseTalk's graphs on their threads", () => {
  it('opens each of the five graphs once, on its thread, however often the engine is loaded', async () => {
    const sessions = new SessionCache({ thread: false, threads: 1 });
    const modelsDir = modelsFolder(MUSETALK_TEST_MODEL);
    const engine = await loadMuseTalk(MUSETALK_TEST_MODEL, { sessions, modelsDir, batch: 2 });
    await loadMuseTalk(MUSETALK_TEST_MODEL, { sessions, modelsDir, batch: 4 });
    const paths = await ensureMuseTalkGraphs(await readMuseTalkManifest(modelsDir, MUSETALK_TEST_MODEL), modelsDir);
    // The graphs run: the Whisper encoder's states of a second of silence.
    expect((await engine.audio(new Float32Array(16_000))).active).toBeGreaterThan(0);
    expect(Object.fromEntries(MUSETALK_GRAPHS.map((graph) => [graph, opens(paths[graph])]))).toEqual(
      Object.fromEntries(MUSETALK_GRAPHS.map((graph) => [graph, { inline: 0, thread: 1 }])),
    );
    // The caller's cache only lent its settings: nothing was opened in it.
    expect(sessions.size).toBe(0);
    // Where each graph opened is known without asking the cache (which would open it again).
    expect(engine.providers).toEqual(Object.fromEntries(MUSETALK_GRAPHS.map((graph) => [graph, 'cpu'])));
    await releaseMuseTalkThreads();
    await expect(engine.audio(new Float32Array(16_000))).rejects.toThrow(/^The inference thread for \S+ exited/);
  });

  it.each<[string, Partial<Record<MuseTalkGraph, Uint8Array>>, RegExp]>([
    [
      'bytes that are no graph',
      { positional_encoding: new Uint8Array([1, 2, 3]) },
      /^Could not open model \S+positional_encoding.onnx: /,
    ],
    [
      'a graph that breaks its contract',
      { unet: built.vae_encoder },
      /^Expected MuseTalk's unet graph interface but unet: no input named sample/,
    ],
  ])('fails on %s exactly as on the calling thread', async (what, graphs, message) => {
    const name = `musetalk-${what.replaceAll(' ', '-')}`;
    const modelsDir = modelsFolder(name, graphs);
    const load = (onThreads: boolean): Promise<{ name: string; message: string }> =>
      failureOf(
        loadMuseTalk(name, { sessions: new SessionCache({ thread: false, threads: 1 }), modelsDir, onThreads }),
      );
    const inline = await load(false);
    expect(inline.message).toMatch(message);
    expect(await load(true)).toEqual(inline);
  });
});
