/**
 * The suno-compatible backend against a fake provider on 127.0.0.1 following the Suno-style API:
 * the happy path through every in-progress status, each failure status, 429/430 retried with
 * backoff, a task stuck past the deadline, a malformed answer, None.mp3 URLs, a slow download,
 * cancellation while polling.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { toMusicRequest } from '../../../../../src/kinds/music/pipeline/request.js';
import { SunoBackend, type SunoBackendOptions } from '../../../../../src/kinds/music/pipeline/suno/backend.js';
import type { GenerateContext, MusicProgress } from '../../../../../src/kinds/music/pipeline/types.js';
import { json, mp3Bytes, serveFile, stallingFile, startFakeServer, type FakeServer } from '../fake-providers.js';

let dir: string;
let server: FakeServer;
let song: Buffer;
let cover: Buffer;
const logger = pino({ level: 'silent' });

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'suno-test-'));
  song = mp3Bytes(1, 440);
  cover = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#884422' } })
    .jpeg()
    .toBuffer();
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  server = await startFakeServer();
  server.route('GET /files/a.mp3', serveFile(song, 'audio/mpeg'));
  server.route('GET /files/b.mp3', serveFile(song, 'audio/mpeg'));
  server.route('GET /files/cover.jpg', serveFile(cover, 'image/jpeg'));
  server.route('GET /files/slow.mp3', stallingFile(song));
});

afterEach(async () => {
  await server.close();
});

function backend(overrides: Partial<SunoBackendOptions> = {}): SunoBackend {
  return new SunoBackend({
    baseUrl: server.url,
    apiKey: 'sk-test',
    model: 'V4_5',
    deadlineMs: 5_000,
    pollIntervalMs: 10,
    fetch: { allowHttp: true, allowPrivate: true, idleTimeoutMs: 300, deadlineMs: 2_000 },
    requestTimeoutMs: 1_000,
    ...overrides,
  });
}

function ctx(progress: MusicProgress[] = [], signal = new AbortController().signal): GenerateContext {
  return { dir, signal, logger, onProgress: (p) => progress.push(p) };
}

const custom = toMusicRequest(
  {
    custom_mode: true,
    title: 'Night Drive',
    style: 'Synthwave',
    lyrics: '[Verse]\nneon lights',
    instrumental: false,
    vocal_gender: 'f',
    negative_tags: 'metal',
  },
  { taskId: 'suno-1', seconds: 60 },
);

function songData(audio: string, title: string): object {
  return {
    id: title,
    audioUrl: audio,
    streamAudioUrl: '',
    imageUrl: `${server.url}/files/cover.jpg`,
    prompt: '[Verse]\nneon lights',
    title,
    tags: 'Synthwave, Dreamy',
    duration: 1,
  };
}

/** record-info answers the statuses in turn, then stays on the last. */
function scriptStatuses(statuses: { status: string; songs?: object[]; errorMessage?: string }[]): void {
  let i = 0;
  server.route('GET /api/v1/generate/record-info', (_req, res) => {
    const s = statuses[Math.min(i, statuses.length - 1)] as (typeof statuses)[number];
    i += 1;
    json(res, 200, {
      code: 200,
      msg: 'success',
      data: {
        taskId: 'prov-1',
        status: s.status,
        response: { taskId: 'prov-1', sunoData: s.songs ?? [] },
        errorCode: null,
        errorMessage: s.errorMessage ?? null,
      },
    });
  });
}

function acceptSubmit(): void {
  server.route('POST /api/v1/generate', (_req, res) =>
    json(res, 200, { code: 200, msg: 'success', data: { taskId: 'prov-1' } }),
  );
}

describe('the suno-compatible backend', () => {
  it('submits the custom request, polls through every status to SUCCESS and downloads both songs and covers', async () => {
    acceptSubmit();
    const both = [
      songData(`${server.url}/files/a.mp3`, 'Night Drive A'),
      songData(`${server.url}/files/b.mp3`, 'Night Drive B'),
    ];
    scriptStatuses([
      { status: 'PENDING' },
      { status: 'TEXT_SUCCESS' },
      { status: 'FIRST_SUCCESS', songs: both.slice(0, 1) },
      { status: 'SUCCESS', songs: both },
    ]);
    const progress: MusicProgress[] = [];
    const songs = await backend().generate(custom, ctx(progress));
    const submit = server.requests.find((r) => r.url === '/api/v1/generate');
    expect(submit?.headers.authorization).toBe('Bearer sk-test');
    expect(submit?.body).toEqual({
      customMode: true,
      instrumental: false,
      model: 'V4_5',
      prompt: '[Verse]\nneon lights',
      style: 'Synthwave',
      title: 'Night Drive',
      negativeTags: 'metal',
      vocalGender: 'f',
    });
    expect(progress.map((p) => p.stage)).toEqual(
      expect.arrayContaining([
        'submitting',
        'provider pending',
        'provider text_success',
        'provider first_success',
        'downloading',
      ]),
    );
    expect(songs).toHaveLength(2);
    expect(songs[0]).toMatchObject({
      title: 'Night Drive A',
      tags: 'Synthwave, Dreamy',
      lyrics: '[Verse]\nneon lights',
    });
    const first = songs[0];
    if (first?.audio.kind !== 'file' || first.imagePath === undefined) throw new Error('expected downloaded files');
    expect((await readFile(first.audio.path)).equals(song)).toBe(true);
    expect((await readFile(first.imagePath)).equals(cover)).toBe(true);
  });

  it.each(['CREATE_TASK_FAILED', 'GENERATE_AUDIO_FAILED', 'CALLBACK_EXCEPTION', 'SENSITIVE_WORD_ERROR'])(
    'fails with a processing failure (GENERATION_FAILED for the job) on %s',
    async (status) => {
      acceptSubmit();
      scriptStatuses([{ status: 'PENDING' }, { status, errorMessage: 'provider says no' }]);
      await expect(backend().generate(custom, ctx())).rejects.toMatchObject({
        name: 'ProcessingError',
        message: `The Suno-style provider reported ${status}: provider says no`,
      });
    },
  );

  it('retries HTTP 429 and body code 430 with backoff, then goes on', async () => {
    let submits = 0;
    server.route('POST /api/v1/generate', (_req, res) => {
      submits += 1;
      if (submits === 1) json(res, 429, { code: 429, msg: 'rate limited' });
      else if (submits === 2) json(res, 200, { code: 430, msg: 'too frequent', data: null });
      else json(res, 200, { code: 200, msg: 'success', data: { taskId: 'prov-1' } });
    });
    scriptStatuses([
      {
        status: 'SUCCESS',
        songs: [songData(`${server.url}/files/a.mp3`, 'A'), songData(`${server.url}/files/b.mp3`, 'B')],
      },
    ]);
    const songs = await backend({ pollIntervalMs: 5 }).generate(custom, ctx());
    expect(submits).toBe(3);
    expect(songs).toHaveLength(2);
  });

  it('gives up on 455 maintenance when the deadline leaves no room for another attempt', async () => {
    server.route('POST /api/v1/generate', (_req, res) => json(res, 455, { code: 455, msg: 'maintenance' }));
    await expect(backend({ deadlineMs: 50, pollIntervalMs: 40 }).generate(custom, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringContaining('answered HTTP 455'),
    });
  });

  it('fails a task stuck in progress past the deadline', async () => {
    acceptSubmit();
    scriptStatuses([{ status: 'TEXT_SUCCESS' }]);
    await expect(backend({ deadlineMs: 200, pollIntervalMs: 20 }).generate(custom, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringContaining('left the task in TEXT_SUCCESS past the'),
    });
  });

  it('fails on a malformed answer', async () => {
    acceptSubmit();
    server.route('GET /api/v1/generate/record-info', (_req, res) =>
      json(res, 200, { code: 200, data: { status: 42 } }),
    );
    await expect(backend().generate(custom, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringContaining('unexpected shape (data.status'),
    });
  });

  it('fails on SUCCESS with a None.mp3 or missing audio URL', async () => {
    acceptSubmit();
    scriptStatuses([
      {
        status: 'SUCCESS',
        songs: [songData(`${server.url}/files/a.mp3`, 'A'), songData('https://cdn.example.test/None.mp3', 'B')],
      },
    ]);
    await expect(backend().generate(custom, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringContaining('without a usable audio URL for song 2'),
    });
    scriptStatuses([{ status: 'SUCCESS', songs: [songData(`${server.url}/files/a.mp3`, 'A'), { title: 'B' }] }]);
    await expect(backend().generate(custom, ctx())).rejects.toMatchObject({
      message: expect.stringContaining('(null)'),
    });
  });

  it('fails when a download stalls', async () => {
    acceptSubmit();
    scriptStatuses([
      {
        status: 'SUCCESS',
        songs: [songData(`${server.url}/files/a.mp3`, 'A'), songData(`${server.url}/files/slow.mp3`, 'B')],
      },
    ]);
    await expect(backend().generate(custom, ctx())).rejects.toMatchObject({
      name: 'ProcessingError',
      message: expect.stringContaining('Could not download the generated audio'),
    });
  });

  it('stops polling when the job is cancelled', async () => {
    acceptSubmit();
    scriptStatuses([{ status: 'PENDING' }]);
    const abort = new AbortController();
    const reason = new Error('cancelled by the watchdog');
    const progress: MusicProgress[] = [];
    const running = backend({ deadlineMs: 60_000, pollIntervalMs: 10 }).generate(custom, {
      ...ctx(progress, abort.signal),
      onProgress: (p) => {
        progress.push(p);
        if (progress.length === 3) abort.abort(reason);
      },
    });
    await expect(running).rejects.toBe(reason);
    const polls = server.requests.filter((r) => r.url.startsWith('/api/v1/generate/record-info')).length;
    await new Promise((r) => setTimeout(r, 100));
    expect(server.requests.filter((r) => r.url.startsWith('/api/v1/generate/record-info')).length).toBe(polls);
  });

  it('is not ready without a base URL and key', async () => {
    const none = new SunoBackend({ model: 'V4_5', deadlineMs: 1, pollIntervalMs: 1, fetch: {} });
    expect(await none.readiness()).toEqual({
      ready: false,
      reason: 'suno-compatible needs MEDIA_WORKER_SUNO_BASE_URL and MEDIA_WORKER_SUNO_API_KEY',
    });
  });
});
