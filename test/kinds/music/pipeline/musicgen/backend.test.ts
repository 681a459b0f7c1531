/**
 * The musicgen backend with the generated TEST model, through the same folder checks, sessions
 * and decoding loop as real weights: shapes, sample counts, two different variations, progress,
 * cancellation, and refusals (lyrics, missing weights, a file that does not match its checksum).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ort from 'onnxruntime-node';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MUSICGEN_FILES, pastName, presentName } from '../../../../../src/kinds/music/pipeline/musicgen/contract.js';
import { MusicgenBackend } from '../../../../../src/kinds/music/pipeline/musicgen/backend.js';
import {
  buildMusicgenTestFolder,
  MUSICGEN_TEST_NAME,
  writeMusicgenTestFolder,
} from '../../../../../src/kinds/music/pipeline/musicgen/test-model.js';
import { readSpec } from '../../../../../src/kinds/music/pipeline/musicgen/folder.js';
import { parseTokenizer } from '../../../../../src/kinds/music/pipeline/musicgen/tokenizer.js';
import { toMusicRequest } from '../../../../../src/kinds/music/pipeline/request.js';
import type { GenerateContext, MusicProgress } from '../../../../../src/kinds/music/pipeline/types.js';

let dir: string;
let backend: MusicgenBackend;
const logger = pino({ level: 'silent' });

function ctx(signal = new AbortController().signal, progress: MusicProgress[] = []): GenerateContext {
  return { dir, signal, logger, onProgress: (p) => progress.push(p) };
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'musicgen-test-'));
  backend = new MusicgenBackend({ dir: path.join(dir, MUSICGEN_TEST_NAME) });
});

afterAll(async () => {
  await backend.release();
  await rm(dir, { recursive: true, force: true });
});

describe('the generated MusicGen test model', () => {
  it('is deterministic and small', () => {
    const a = buildMusicgenTestFolder().files;
    const b = buildMusicgenTestFolder().files;
    expect(Object.keys(a).sort()).toEqual(Object.values(MUSICGEN_FILES).sort());
    for (const [name, bytes] of Object.entries(a))
      expect(Buffer.from(bytes).equals(Buffer.from(b[name] as Uint8Array))).toBe(true);
    const total = Object.values(a).reduce((n, f) => n + f.length, 0);
    expect(total).toBeLessThan(100_000);
  });

  it('has the ONNX contract of the real export', async () => {
    const folder = path.join(dir, 'contract');
    await writeMusicgenTestFolder(folder);
    const text = await ort.InferenceSession.create(path.join(folder, MUSICGEN_FILES.textEncoder));
    expect([...text.inputNames].sort()).toEqual(['attention_mask', 'input_ids']);
    expect(text.outputNames).toEqual(['last_hidden_state']);
    const decoder = await ort.InferenceSession.create(path.join(folder, MUSICGEN_FILES.decoder));
    expect(decoder.inputNames).toContain(pastName(23, 'encoder', 'value'));
    expect(decoder.inputNames).toContain('use_cache_branch');
    expect(decoder.outputNames).toContain(presentName(23, 'decoder', 'key'));
    expect(decoder.outputNames[0]).toBe('logits');
    const audio = await ort.InferenceSession.create(path.join(folder, MUSICGEN_FILES.audioDecoder));
    const out = await audio.run({
      audio_codes: new ort.Tensor('int64', new BigInt64Array(1 * 2 * 4 * 5).fill(100n), [1, 2, 4, 5]),
    });
    expect(out['audio_values']?.dims).toEqual([2, 1, 5 * 640]);
    const spec = await readSpec(folder);
    expect(spec).toMatchObject({
      codebooks: 4,
      padToken: 2048,
      vocab: 2048,
      layers: 24,
      heads: 16,
      headDim: 64,
      sampleRate: 32000,
      hop: 640,
      guidanceScale: 3,
      topK: 250,
    });
    await Promise.all([text.release(), decoder.release(), audio.release()]);
  });

  it('tokenizes with the Unigram model, ending with </s>', async () => {
    const tokenizer = parseTokenizer(
      JSON.parse(
        Buffer.from(buildMusicgenTestFolder().files[MUSICGEN_FILES.tokenizer] as Uint8Array).toString('utf8'),
      ) as unknown,
    );
    const ids = tokenizer.encode('rock  piano!');
    expect(ids.at(-1)).toBe(1);
    // "▁rock" and "▁piano" are whole pieces; "!" is unknown (2). Case matters, as in T5: "R" would be unknown too.
    expect(ids).toHaveLength(4);
    expect(ids[2]).toBe(2);
    expect(tokenizer.encode('')).toEqual([1]);
  });
});

describe('the musicgen backend', () => {
  it('makes a batch of two different songs of 32000 x seconds samples, reporting each step', async () => {
    const progress: MusicProgress[] = [];
    const request = toMusicRequest(
      { custom_mode: false, prompt: 'calm piano', instrumental: true },
      { taskId: 'mg-1', seconds: 1 },
    );
    const songs = await backend.generate(request, ctx(undefined, progress));
    expect(songs).toHaveLength(2);
    const [a, b] = songs.map((s) => s.audio);
    if (a?.kind !== 'pcm' || b?.kind !== 'pcm') throw new Error('expected pcm');
    expect(a.sampleRate).toBe(32000);
    expect(a.channels).toBe(1);
    expect(a.samples.length).toBe(32000);
    expect(b.samples.length).toBe(32000);
    expect(Buffer.from(a.samples.buffer).equals(Buffer.from(b.samples.buffer))).toBe(false);
    expect(a.samples.every((v) => Number.isFinite(v) && Math.abs(v) <= 1)).toBe(true);
    const steps = progress.filter((p) => p.stage === 'generating');
    // 50 frames plus the 3-step delay of the last codebook.
    expect(steps.at(-1)).toEqual({ stage: 'generating', done: 53, total: 53, unit: 'steps' });
  });

  it('makes the same songs for the same task and different ones for another', async () => {
    const run = async (taskId: string) =>
      (
        await backend.generate(
          toMusicRequest({ custom_mode: false, prompt: 'jazz', instrumental: true }, { taskId, seconds: 0.2 }),
          ctx(),
        )
      ).map((s) => (s.audio.kind === 'pcm' ? Buffer.from(s.audio.samples.buffer) : Buffer.alloc(0)));
    const [x1] = await run('same');
    const [x2] = await run('same');
    const [y] = await run('other');
    expect(x1?.equals(x2 as Buffer)).toBe(true);
    expect(x1?.equals(y as Buffer)).toBe(false);
  });

  it('stops at the next step when the job is cancelled', async () => {
    const abort = new AbortController();
    const progress: MusicProgress[] = [];
    const reason = new Error('watchdog');
    const request = toMusicRequest(
      { custom_mode: false, prompt: 'rock', instrumental: true },
      { taskId: 'mg-2', seconds: 30 },
    );
    const running = backend.generate(request, {
      ...ctx(abort.signal, progress),
      onProgress: (p) => {
        progress.push(p);
        if (p.done === 3) abort.abort(reason);
      },
    });
    await expect(running).rejects.toBe(reason);
    expect(Math.max(...progress.map((p) => p.done ?? 0))).toBe(3);
  });

  it('refuses lyrics with a processing failure (GENERATION_FAILED for the job)', async () => {
    const request = toMusicRequest(
      { custom_mode: true, title: 'T', style: 'pop', lyrics: '[Verse] hi', instrumental: false },
      { taskId: 'mg-3', seconds: 1 },
    );
    await expect(backend.generate(request, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringContaining('cannot sing lyrics'),
    });
  });

  it('is not ready without installed weights, and names what is missing', async () => {
    const absent = new MusicgenBackend({ dir: path.join(dir, 'musicgen-small') });
    const readiness = await absent.readiness();
    expect(readiness).toMatchObject({
      ready: false,
      reason: expect.stringContaining('onnx/decoder_model_merged.onnx'),
    });
    const request = toMusicRequest(
      { custom_mode: false, prompt: 'x', instrumental: true },
      { taskId: 'mg-4', seconds: 1 },
    );
    await expect(absent.generate(request, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringContaining('MusicGen weights are not installed'),
    });
  });

  it('refuses a folder whose file does not match its recorded sha256', async () => {
    const folder = path.join(dir, 'tampered');
    await writeMusicgenTestFolder(folder);
    const config = path.join(folder, MUSICGEN_FILES.config);
    await writeFile(config, (await readFile(config, 'utf8')).replace('"top_k"', '"top_k" ').replace('32000', '16000'));
    const tampered = new MusicgenBackend({ dir: folder });
    const request = toMusicRequest(
      { custom_mode: false, prompt: 'x', instrumental: true },
      { taskId: 'mg-5', seconds: 1 },
    );
    await expect(tampered.generate(request, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringContaining('expects'),
    });
  });
});
