import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resultUrl } from '../../src/protocol/index.js';
import { LocalResultStore, resultLifetimeMs } from '../../src/worker/results.js';

const DAY = 24 * 60 * 60 * 1000;
let dir: string;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-results-test-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const exists = (p: string): Promise<boolean> =>
  fs.access(p).then(
    () => true,
    () => false,
  );

async function scratchFile(name: string, content = 'data'): Promise<string> {
  const p = path.join(dir, 'scratch', name);
  await fs.mkdir(path.dirname(p), { recursive: true });
  await fs.writeFile(p, content);
  return p;
}

describe('result lifetimes', () => {
  it.each([
    ['lipsync', 3, 7 * DAY],
    ['music', 3, 14 * DAY],
    ['image', 3, 3 * DAY],
    ['video', 10, 10 * DAY],
  ] as const)('%s with upscale lifetime %i days lives %i ms', (kind, upscaleDays, ms) => {
    expect(resultLifetimeMs(kind, upscaleDays)).toBe(ms);
  });
});

describe('storeResult', () => {
  it('moves the file under <dir>/<kind>/<task id>/ and returns its public URL and expiry', async () => {
    const store = new LocalResultStore({
      resultsDir: path.join(dir, 'results'),
      publicBaseUrl: 'https://cdn.example.com/r',
      upscaleResultLifetimeDays: 7,
    });
    const local = await scratchFile('out.mp4', 'video bytes');
    const before = Date.now();
    const stored = await store.storeResult(local, { taskId: 'task-1', kind: 'lipsync', ext: 'mp4' });
    expect(stored.path).toBe(path.join(dir, 'results', 'lipsync', 'task-1', 'output.mp4'));
    expect(stored.url).toBe('https://cdn.example.com/r/lipsync/task-1/output.mp4');
    // What the completion event says of the file: read back from the stored copy.
    expect(stored).toMatchObject({
      key: 'lipsync/task-1/output.mp4',
      size: 11,
      sha256: createHash('sha256').update('video bytes').digest('hex'),
    });
    expect(await fs.readFile(stored.path, 'utf8')).toBe('video bytes');
    await expect(fs.access(local)).rejects.toThrow();
    const expires = Date.parse(stored.expiresAt) - before;
    expect(expires).toBeGreaterThanOrEqual(7 * DAY - 1000);
    expect(expires).toBeLessThanOrEqual(7 * DAY + 1000);
    // The lifetime counts from the store, not from when the file was written.
    expect((await fs.stat(stored.path)).mtimeMs).toBeGreaterThanOrEqual(before - 1000);
    expect(await fs.readdir(path.dirname(stored.path))).toEqual(['output.mp4']);
  });

  it('names several files of one task and falls back to file:// URLs without a base URL', async () => {
    const store = new LocalResultStore({ resultsDir: path.join(dir, 'results'), upscaleResultLifetimeDays: 7 });
    const stored = await store.storeResult(await scratchFile('a.mp3'), {
      taskId: 'song',
      kind: 'music',
      ext: 'mp3',
      name: 'song-1',
    });
    expect(stored.url).toBe(`file://${path.join(dir, 'results', 'music', 'song', 'song-1.mp3')}`);
  });

  it.each([
    [{ taskId: '../etc', kind: 'image', ext: 'png' }, /Expected taskId/],
    [{ taskId: 't', kind: 'gpu', ext: 'png' }, /Expected kind/],
    [{ taskId: 't', kind: 'image', ext: 'p/ng' }, /Expected ext/],
    [{ taskId: 't', kind: 'image', ext: 'png', name: '../x' }, /Expected name/],
  ])('refuses %o', async (options, message) => {
    const store = new LocalResultStore({ resultsDir: path.join(dir, 'results'), upscaleResultLifetimeDays: 7 });
    await expect(store.storeResult(await scratchFile('x'), options as never)).rejects.toThrow(message);
  });

  it('joins base URLs with or without a trailing slash', () => {
    expect(resultUrl('https://cdn.example.com/r/', ['image', 't', 'output.png'])).toBe(
      'https://cdn.example.com/r/image/t/output.png',
    );
    expect(resultUrl('https://cdn.example.com', ['image', 't', 'output.png'])).toBe(
      'https://cdn.example.com/image/t/output.png',
    );
  });
});

describe('sweep', () => {
  it('deletes each file once its kind lifetime has passed, and the emptied task directories', async () => {
    const resultsDir = path.join(dir, 'results');
    const store = new LocalResultStore({ resultsDir, upscaleResultLifetimeDays: 3 });
    const stored = {
      image: await store.storeResult(await scratchFile('i'), { taskId: 'img', kind: 'image', ext: 'png' }),
      lipsync: await store.storeResult(await scratchFile('l'), { taskId: 'lip', kind: 'lipsync', ext: 'mp4' }),
      music: await store.storeResult(await scratchFile('m'), { taskId: 'mus', kind: 'music', ext: 'mp3' }),
    };
    const now = Date.now();

    expect(await store.sweep(new Date(now + 2 * DAY))).toEqual({ removed: 0, kept: 3, errors: 0 });
    expect(await store.sweep(new Date(now + 3 * DAY + 1000))).toEqual({ removed: 1, kept: 2, errors: 0 });
    expect(await exists(stored.image.path)).toBe(false);
    expect(await exists(path.dirname(stored.image.path))).toBe(false);
    expect(await store.sweep(new Date(now + 7 * DAY + 1000))).toEqual({ removed: 1, kept: 1, errors: 0 });
    expect(await exists(stored.lipsync.path)).toBe(false);
    expect(await exists(stored.music.path)).toBe(true);
    expect(await store.sweep(new Date(now + 14 * DAY + 1000))).toEqual({ removed: 1, kept: 0, errors: 0 });
    expect(await exists(stored.music.path)).toBe(false);
  });

  it('removes half-written copies left by a crash after a day', async () => {
    const resultsDir = path.join(dir, 'results');
    const store = new LocalResultStore({ resultsDir, upscaleResultLifetimeDays: 30 });
    // A partial file of a process this host cannot judge (another boot or container): removed by age.
    const partial = path.join(resultsDir, 'image', 't', '.output.png.p1s2d00000000.ab12cd34.partial');
    await fs.mkdir(path.dirname(partial), { recursive: true });
    await fs.writeFile(partial, 'x');
    expect(await store.sweep(new Date(Date.now() + DAY / 2))).toEqual({ removed: 0, kept: 1, errors: 0 });
    expect(await store.sweep(new Date(Date.now() + DAY + 1000))).toEqual({ removed: 1, kept: 0, errors: 0 });
  });

  it("discards every result of one task, of any kind, and no other task's; refuses an id that could leave the directory", async () => {
    const resultsDir = path.join(dir, 'results');
    const store = new LocalResultStore({ resultsDir, upscaleResultLifetimeDays: 30 });
    const mine = await store.storeResult(await scratchFile('a.png'), { taskId: 't_mine', kind: 'image', ext: 'png' });
    const other = await store.storeResult(await scratchFile('b.png'), { taskId: 't_other', kind: 'image', ext: 'png' });
    await store.discard('t_mine');
    expect(await exists(mine.path)).toBe(false);
    expect(await exists(path.dirname(mine.path))).toBe(false);
    expect(await exists(other.path)).toBe(true);
    await store.discard('t_never_stored');
    await expect(store.discard('../image')).rejects.toThrow(/Expected taskId/);
    expect(await exists(other.path)).toBe(true);
  });

  it('is a no-op on a missing results directory', async () => {
    const store = new LocalResultStore({ resultsDir: path.join(dir, 'nothing-here'), upscaleResultLifetimeDays: 7 });
    expect(await store.sweep()).toEqual({ removed: 0, kept: 0, errors: 0 });
  });
});
