/**
 * The ace-step backend against a fake ACE-Step 1.5 API server on 127.0.0.1 (its docs/en/API.md):
 * release_task, query_result with status 0 -> 1 and the result as a JSON string, /v1/audio
 * downloads; failure (status 2), a stuck task, a malformed result, a foreign audio host, a server
 * that is down, and how the request is mapped.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { releaseBody } from '../../../../../src/kinds/music/pipeline/ace-step/api.js';
import { AceStepBackend } from '../../../../../src/kinds/music/pipeline/ace-step/backend.js';
import { toMusicRequest } from '../../../../../src/kinds/music/pipeline/request.js';
import type { GenerateContext, MusicProgress } from '../../../../../src/kinds/music/pipeline/types.js';
import { json, mp3Bytes, startFakeServer, type FakeServer } from '../fake-providers.js';

let dir: string;
let server: FakeServer;
let song: Buffer;
const logger = pino({ level: 'silent' });

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'acestep-test-'));
  song = mp3Bytes(1, 330);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  server = await startFakeServer();
  server.route('GET /health', (_req, res) =>
    json(res, 200, {
      data: { status: 'ok', service: 'ACE-Step API', version: '1.0' },
      code: 200,
      error: null,
      timestamp: Date.now(),
      extra: null,
    }),
  );
  server.route('POST /release_task', (_req, res) =>
    json(res, 200, {
      data: { task_id: 'ace-1', status: 'queued', queue_position: 1 },
      code: 200,
      error: null,
      timestamp: Date.now(),
      extra: null,
    }),
  );
  server.route('GET /v1/audio', (req, res) => {
    const file = new URL(req.url, 'http://x').searchParams.get('path');
    if (file === '/tmp/api_audio/a.mp3' || file === '/tmp/api_audio/b.mp3')
      res.writeHead(200, { 'content-type': 'audio/mpeg' }).end(song);
    else res.writeHead(404).end();
  });
});

afterEach(async () => {
  await server.close();
});

function backend(overrides: { deadlineMs?: number } = {}): AceStepBackend {
  return new AceStepBackend({
    baseUrl: server.url,
    apiKey: 'ace-key',
    deadlineMs: overrides.deadlineMs ?? 5_000,
    pollIntervalMs: 10,
    fetch: { idleTimeoutMs: 500 },
    requestTimeoutMs: 1_000,
  });
}

function ctx(progress: MusicProgress[] = []): GenerateContext {
  return { dir, signal: new AbortController().signal, logger, onProgress: (p) => progress.push(p) };
}

const entry = (file: string) => ({
  file,
  wave: '',
  status: 1,
  create_time: 1700000000,
  prompt: 'synthwave',
  lyrics: '[Verse]\nwritten by the LM',
  metas: { bpm: 120, duration: 30, genres: 'Synthwave, Electronic', keyscale: 'C Major', timesignature: '4' },
});

function scriptQuery(answers: { status: number; result?: string }[]): void {
  let i = 0;
  server.route('POST /query_result', (_req, res) => {
    const a = answers[Math.min(i, answers.length - 1)] as { status: number; result?: string };
    i += 1;
    json(res, 200, {
      data: [{ task_id: 'ace-1', status: a.status, result: a.result ?? '' }],
      code: 200,
      error: null,
      timestamp: Date.now(),
      extra: null,
    });
  });
}

const simple = toMusicRequest(
  { custom_mode: false, prompt: 'a soft synthwave love song', instrumental: false },
  { taskId: 'ace-t', seconds: 30 },
);

describe('the ace-step backend', () => {
  it('maps simple, instrumental and custom requests to release_task bodies', () => {
    expect(releaseBody(simple)).toMatchObject({
      sample_query: 'a soft synthwave love song',
      thinking: true,
      batch_size: 2,
      audio_duration: 30,
      audio_format: 'mp3',
      use_random_seed: false,
    });
    expect(releaseBody(simple)).not.toHaveProperty('lyrics');
    const instrumental = toMusicRequest(
      { custom_mode: false, prompt: 'piano', instrumental: true },
      { taskId: 'x', seconds: 5 },
    );
    expect(releaseBody(instrumental)).toMatchObject({ prompt: 'piano', lyrics: '[Instrumental]', audio_duration: 10 });
    const custom = toMusicRequest(
      {
        custom_mode: true,
        title: 'T',
        style: 'Pop',
        lyrics: '[Chorus] la',
        instrumental: false,
        vocal_gender: 'm',
        negative_tags: 'Metal',
      },
      { taskId: 'x', seconds: 900 },
    );
    expect(releaseBody(custom)).toMatchObject({
      prompt: 'Pop, male vocals',
      lyrics: '[Chorus] la',
      lm_negative_prompt: 'metal',
      audio_duration: 600,
    });
  });

  it('submits, polls to success and downloads both songs from /v1/audio', async () => {
    const running = JSON.stringify([
      { file: '', wave: '', status: 0, prompt: '', lyrics: '', metas: {}, progress: 0.5, stage: 'dit' },
    ]);
    scriptQuery([
      { status: 0, result: '[]' },
      { status: 0, result: running },
      {
        status: 1,
        result: JSON.stringify([
          entry('/v1/audio?path=%2Ftmp%2Fapi_audio%2Fa.mp3'),
          entry('/v1/audio?path=%2Ftmp%2Fapi_audio%2Fb.mp3'),
        ]),
      },
    ]);
    const progress: MusicProgress[] = [];
    const songs = await backend().generate(simple, ctx(progress));
    const release = server.requests.find((r) => r.url === '/release_task');
    expect(release?.headers.authorization).toBe('Bearer ace-key');
    expect(release?.body).toMatchObject({ sample_query: 'a soft synthwave love song', batch_size: 2 });
    expect(server.requests.find((r) => r.url === '/query_result')?.body).toEqual({ task_id_list: ['ace-1'] });
    expect(progress.map((p) => p.stage)).toEqual(
      expect.arrayContaining(['submitting', 'queued or running', 'downloading']),
    );
    expect(progress).toContainEqual({ stage: 'running: dit', done: 50, total: 100, unit: '%' });
    expect(songs).toHaveLength(2);
    expect(songs[0]).toMatchObject({ lyrics: '[Verse]\nwritten by the LM', tags: 'Synthwave, Electronic' });
    const first = songs[0];
    if (first?.audio.kind !== 'file') throw new Error('expected a file');
    expect((await readFile(first.audio.path)).equals(song)).toBe(true);
  });

  it('fails with a processing failure (GENERATION_FAILED for the job) when the task fails, is stuck, or answers nonsense', async () => {
    scriptQuery([
      {
        status: 2,
        result: JSON.stringify([
          {
            file: '',
            wave: '',
            status: 2,
            prompt: '',
            lyrics: '',
            metas: {},
            progress: 0.4,
            stage: 'dit',
            error: 'CUDA out of memory',
          },
        ]),
      },
    ]);
    await expect(backend().generate(simple, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: 'ACE-Step reported the task failed: CUDA out of memory',
    });
    scriptQuery([{ status: 1, result: JSON.stringify([{ ...entry(''), file: '' }]) }]);
    await expect(backend().generate(simple, ctx())).rejects.toMatchObject({
      message: 'ACE-Step succeeded with 0 audio files instead of 2',
    });
    scriptQuery([{ status: 0 }]);
    await expect(backend({ deadlineMs: 150 }).generate(simple, ctx())).rejects.toMatchObject({
      message: expect.stringContaining('unfinished past the'),
    });
    scriptQuery([{ status: 1, result: '[{"nofile": true}]' }]);
    // (file is required even when empty)
    await expect(backend().generate(simple, ctx())).rejects.toMatchObject({
      message: expect.stringContaining('unexpected result (0.file'),
    });
    scriptQuery([
      { status: 1, result: JSON.stringify([entry('https://evil.example.test/a.mp3'), entry('/v1/audio?path=x')]) },
    ]);
    await expect(backend().generate(simple, ctx())).rejects.toMatchObject({
      message: expect.stringContaining('audio URL on another host'),
    });
  });

  it('is ready when /health answers ok, and says why not when the server is down', async () => {
    expect(await backend().readiness()).toEqual({ ready: true });
    const down = new AceStepBackend({
      baseUrl: 'http://127.0.0.1:9',
      deadlineMs: 1_000,
      pollIntervalMs: 10,
      fetch: {},
    });
    expect(await down.readiness()).toMatchObject({
      ready: false,
      reason: expect.stringContaining('ACE-Step server at http://127.0.0.1:9/ does not answer /health'),
    });
  });
});
