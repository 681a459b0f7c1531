/**
 * The `sync-compatible` lip-sync backend against a fake provider that follows sync.so's documented
 * v2 API (test/helpers/fake-sync.ts), failures included: the request it sends (x-api-key, the
 * task's Idempotency-Key, the mapped model, sync_mode and active speaker), the output it accepts
 * (downloaded safely, a real video with the job's audio, as long as the sync mode makes it), and
 * every way it fails: 401, 402, 400 with generation_unsupported_model, 429 with Retry-After, 5xx,
 * an answer lost after the generation was made, FAILED and REJECTED generations, a provider past
 * the limit, an output URL that 404s, an output that is not a video, a redirect to a private
 * address, and a repeated Idempotency-Key.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ProcessingError } from '../../../../../src/errors.js';
import type { LipsyncModelId, SyncMode } from '../../../../../src/jobs/index.js';
import {
  DEFAULT_SYNC_MODEL_MAP,
  SyncBackend,
  syncIdempotencyKey,
  type LipsyncBackendRequest,
  type SyncBackendOptions,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import { probeMedia, type MediaInfo } from '../../../../../src/media/index.js';
import { startFakeSync, type FakeSync } from '../../../../helpers/fake-sync.js';
import { startInputServer, type InputServer } from '../../../../helpers/input-server.js';
import { makeClip } from '../../../../media/helpers.js';
import { speechClip } from '../pipeline-fixtures.js';

let dir: string;
let inputs: InputServer;
let inputBase: string;
let video: { path: string; info: MediaInfo };
let longVideo: { path: string; info: MediaInfo };
let audio: { path: string; info: MediaInfo };
let fake: FakeSync;
let logLines: string[];
let jobDir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'sync-backend-'));
  const clip = await makeClip(path.join(dir, 'face.mp4'), { seconds: 1, size: '64x48', rate: 25, audio: true });
  const long = await makeClip(path.join(dir, 'long.mp4'), { seconds: 3, size: '64x48', rate: 25 });
  const speech = await speechClip(path.join(dir, 'speech.mp3'), 2);
  video = { path: clip, info: await probeMedia(clip) };
  longVideo = { path: long, info: await probeMedia(long) };
  audio = { path: speech, info: await probeMedia(speech) };
  inputs = await startInputServer({ '/face.mp4': clip, '/long.mp4': long, '/speech.mp3': speech });
  inputBase = inputs.url;
});

afterAll(async () => {
  await inputs?.close();
  await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  fake = await startFakeSync();
  logLines = [];
  jobDir = await mkdtemp(path.join(dir, 'job-'));
});

afterEach(async () => {
  await fake.close();
});

function backend(overrides: Partial<SyncBackendOptions> = {}): SyncBackend {
  return new SyncBackend({
    baseUrl: fake.url,
    apiKey: fake.key,
    models: { ...DEFAULT_SYNC_MODEL_MAP },
    pollIntervalMs: 20,
    retryDelayMs: 10,
    // The fake's own origin is the one private place outputs may come from (as MEDIA_WORKER_PRIVATE_ORIGINS).
    fetch: { allowHttp: false, allowPrivate: false, privateUrlPrefixes: [`${fake.url}/`] },
    ...overrides,
  });
}

function request(overrides: Partial<LipsyncBackendRequest> = {}): LipsyncBackendRequest {
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString());
        done();
      },
    }),
  );
  return {
    taskId: 'task-1',
    model: 'vendor-lipsync-2' as LipsyncModelId,
    syncMode: 'cut_off' as SyncMode,
    activeSpeaker: false,
    videoSource: `${inputBase}/face.mp4`,
    audioSource: `${inputBase}/speech.mp3`,
    videoPath: video.path,
    videoInfo: video.info,
    audioPath: audio.path,
    audioInfo: audio.info,
    dir: jobDir,
    outputPath: path.join(jobDir, 'output.mp4'),
    signal: new AbortController().signal,
    timeLimitMs: 60_000,
    logger,
    onProgress: () => {},
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ProcessingError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProcessingError);
  return err as ProcessingError;
}

describe('the sync-compatible backend', () => {
  it('sends the documented request and returns the measured output: a video with the job audio, cut to the shorter input', async () => {
    const outcome = await backend().run(request({ model: 'vendor-lipsync-3', activeSpeaker: true }));
    expect(fake.generations).toHaveLength(1);
    const [g] = fake.generations;
    expect(g).toMatchObject({
      model: 'sync-3',
      key: syncIdempotencyKey('task-1'),
      upload: false,
      options: { sync_mode: 'cut_off', active_speaker_detection: { auto_detect: true } },
    });
    expect(syncIdempotencyKey('task-1')).toMatch(/^[A-Za-z0-9._~-]{1,128}$/);
    expect(syncIdempotencyKey('task-1')).not.toBe(syncIdempotencyKey('task-2'));
    const out = await probeMedia(outcome.outputPath);
    expect(out.video).toBeDefined();
    expect(out.audio).toBeDefined();
    // cut_off of a 1 s video and 2 s of speech: about 1 s.
    expect(outcome.durationSeconds).toBeCloseTo(1, 0);
    expect(outcome.durationSeconds).toBe(out.durationSeconds);
    expect(outcome.details).toMatchObject({
      backend: 'sync-compatible',
      generationId: 'gen-1',
      providerModel: 'sync-3',
    });
    expect(existsSync(path.join(jobDir, 'provider-output'))).toBe(true);
  });

  it('maps each public id to the configured provider model, and serves none mapped to null', async () => {
    const b = backend({ models: { ...DEFAULT_SYNC_MODEL_MAP, 'vendor-lipsync-2-pro': null } });
    expect(b.models()).toEqual(['vendor-lipsync-2', 'vendor-lipsync-3']);
    await b.run(request({ model: 'vendor-lipsync-2', syncMode: 'loop', videoSource: `${inputBase}/face.mp4` }));
    expect(fake.generations[0]).toMatchObject({ model: 'lipsync-2', options: { sync_mode: 'loop' } });
    const err = await failure(b.run(request({ taskId: 'task-pro', model: 'vendor-lipsync-2-pro' })));
    expect(err.message).toContain('does not serve vendor-lipsync-2-pro');
  });

  it('waits out 429 Retry-After and retries 5xx with the same Idempotency-Key: one generation', async () => {
    fake.forced.push({
      status: 429,
      headers: { 'retry-after': '0' },
      body: { statusCode: 429, message: 'Too many concurrent generations', errorCode: 'concurrency_limit' },
    });
    fake.forced.push({ status: 503 });
    await backend().run(request());
    expect(fake.posts.map((p) => p.answered)).toEqual([429, 503, 201]);
    expect(new Set(fake.posts.map((p) => p.key))).toEqual(new Set([syncIdempotencyKey('task-1')]));
    expect(fake.generations).toHaveLength(1);
    expect(logLines.join('')).toContain('retrying with the same Idempotency-Key');
  });

  it('honours a Retry-After longer than its own backoff', async () => {
    fake.forced.push({ status: 429, headers: { 'retry-after': '1' } });
    const waits: number[] = [];
    await backend().run(request());
    for (const line of logLines) {
      const rec = JSON.parse(line) as { msg: string; delayMs?: number };
      if (rec.msg.includes('retrying')) waits.push(rec.delayMs ?? 0);
    }
    expect(waits).toEqual([1000]);
  });

  it("polls no sooner than a running generation's Retry-After asks", async () => {
    fake.pollRetryAfter = '1';
    fake.pollsBeforeDone = 1;
    await backend().run(request());
    const paced = logLines
      .map((l) => JSON.parse(l) as { msg: string; waitMs?: number })
      .filter((l) => l.msg.includes('poll later'));
    // The POST's answer (PENDING) and the first poll's (PROCESSING) both said 1 s; the second poll completed.
    expect(paced.map((l) => l.waitMs)).toEqual([1000, 1000]);
    expect(fake.gets).toEqual(['gen-1', 'gen-1']);
  });

  it('a hostile Retry-After (999999 s) on a 429 is read as the longest wait: the POST is retried, the task not parked', async () => {
    fake.forced.push({ status: 429, headers: { 'retry-after': '999999' } });
    await backend({ maxWaitMs: 50 }).run(request());
    const waits = logLines
      .map((l) => JSON.parse(l) as { msg: string; delayMs?: number })
      .filter((l) => l.msg.includes('retrying'));
    expect(waits.map((l) => l.delayMs)).toEqual([50]);
    expect(fake.posts.map((p) => p.answered)).toEqual([429, 201]);
    expect(fake.generations).toHaveLength(1);
  });

  it('a hostile Retry-After (999999 s) on a running generation is read as the longest wait between polls', async () => {
    fake.pollRetryAfter = '999999';
    fake.pollsBeforeDone = 1;
    const outcome = await backend({ maxWaitMs: 50 }).run(request());
    const paced = logLines
      .map((l) => JSON.parse(l) as { msg: string; waitMs?: number })
      .filter((l) => l.msg.includes('poll later'));
    expect(paced.map((l) => l.waitMs)).toEqual([50, 50]);
    expect(outcome.details).toMatchObject({ generationId: 'gen-1' });
  });

  it('an answer lost after the provider made the generation: the retry gets the same generation back', async () => {
    fake.forced.push({ status: 502, afterCreating: true });
    const outcome = await backend().run(request());
    expect(fake.generations).toHaveLength(1);
    expect(fake.posts).toHaveLength(2);
    expect(fake.replays).toBe(1);
    expect(outcome.details).toMatchObject({ generationId: 'gen-1' });
  });

  it('a repeated task (a redelivered job) gets the generation it already asked for, not a second one', async () => {
    await backend().run(request());
    const again = await backend().run(request({ outputPath: path.join(jobDir, 'again.mp4') }));
    expect(fake.generations).toHaveLength(1);
    expect(fake.replays).toBe(1);
    expect(again.details).toMatchObject({ generationId: 'gen-1' });
  });

  it('the same key with another request is refused by the provider and fails the job: no second generation', async () => {
    await backend().run(request());
    const err = await failure(
      backend().run(request({ model: 'vendor-lipsync-2-pro', outputPath: path.join(jobDir, 'other.mp4') })),
    );
    expect(err.message).toContain('HTTP 422 (IDEMPOTENCY_KEY_REUSED)');
    expect(fake.generations).toHaveLength(1);
  });

  it.each([
    [401, 'unauthorized', 'refused the API key'],
    [402, 'payment_required', 'cannot pay for a generation'],
  ])('fails at once on %i, with a log line naming the cause', async (status, errorCode, cause) => {
    fake.forced.push({ status, body: { statusCode: status, message: 'no', errorCode } });
    const err = await failure(backend().run(request()));
    expect(err.message).toContain(cause);
    expect(fake.posts).toHaveLength(1);
    expect(fake.generations).toHaveLength(0);
    const line = logLines
      .map((l) => JSON.parse(l) as { level: number; msg: string; errorCode?: string })
      .find((l) => l.level === 50);
    expect(line).toMatchObject({
      msg: `lip-sync provider: ${cause.startsWith('refused') ? 'the provider refused the API key (MEDIA_WORKER_SYNC_API_KEY)' : 'the provider account cannot pay for a generation'}`,
      errorCode,
    });
  });

  it('a key refused during a job (revoked since the start-up check) makes the backend not ready', async () => {
    const b = backend();
    expect(await b.readiness()).toEqual({ ready: true });
    fake.forced.push({ status: 401, body: { statusCode: 401, message: 'Unauthorized', errorCode: 'unauthorized' } });
    await failure(b.run(request()));
    expect(await b.readiness()).toEqual({
      ready: false,
      reason: expect.stringContaining('refused MEDIA_WORKER_SYNC_API_KEY (HTTP 401) during a job'),
    });
  });

  describe('an account out of credit (402)', () => {
    let clock: number;
    const outOfCredit = (): SyncBackend => backend({ now: () => clock, outOfCreditWaitMs: 60_000 });
    const askedAgainAt = (ms: number): string => `readiness asks the provider again from ${new Date(ms).toISOString()}`;
    beforeEach(() => {
      clock = Date.parse('2026-03-01T12:00:00.000Z');
    });

    it('fails the job as before and makes the backend not ready, naming the answer, until a readiness check after the wait', async () => {
      const b = outOfCredit();
      expect(await b.readiness()).toEqual({ ready: true });
      fake.outOfCredit = 'generations';
      // Two jobs that ran together: both fail as any 402 does, and start one wait.
      const errors = await Promise.all([
        failure(b.run(request({ taskId: 'task-a' }))),
        failure(b.run(request({ taskId: 'task-b' }))),
      ]);
      for (const err of errors)
        expect(err.message).toContain('failed (the provider account cannot pay for a generation)');
      const out = await b.readiness();
      expect(out).toEqual({ ready: false, reason: expect.stringMatching(/^out of credit \(HTTP 402 during a job: /) });
      expect(out).toMatchObject({
        reason: expect.stringContaining('HTTP 402 (payment_required): Insufficient credits'),
      });
      expect(out).toMatchObject({ reason: expect.stringContaining(askedAgainAt(clock + 60_000)) });

      // Within the wait the provider is not asked.
      clock += 59_999;
      expect(await b.readiness()).toMatchObject({ ready: false });
      expect(fake.gets).toEqual(['media-worker-key-check']);

      // The next check after it asks again; the provider answers: ready.
      clock += 1;
      expect(await b.readiness()).toEqual({ ready: true });
      expect(fake.gets).toEqual(['media-worker-key-check', 'media-worker-key-check']);

      // Still empty: the job that tries fails the same way, and the wait doubles.
      await failure(b.run(request({ taskId: 'task-c' })));
      expect(await b.readiness()).toMatchObject({
        ready: false,
        reason: expect.stringContaining(askedAgainAt(clock + 120_000)),
      });

      // Credit added: ready after the wait, a generation accepted, and the next 402 waits the first wait again.
      fake.outOfCredit = undefined;
      clock += 120_000;
      expect(await b.readiness()).toEqual({ ready: true });
      await b.run(request({ taskId: 'task-d' }));
      fake.outOfCredit = 'generations';
      await failure(b.run(request({ taskId: 'task-e' })));
      expect(await b.readiness()).toMatchObject({
        ready: false,
        reason: expect.stringContaining(askedAgainAt(clock + 60_000)),
      });
      expect(fake.generations).toHaveLength(1);
    });

    it('a provider that answers 402 to the readiness check too stays not ready, each wait twice the last', async () => {
      const b = outOfCredit();
      fake.outOfCredit = 'every call';
      expect(await b.readiness()).toEqual({
        ready: false,
        reason: expect.stringMatching(/^out of credit \(HTTP 402 to the readiness check: GET .*answered HTTP 402/),
      });
      clock += 60_000;
      expect(await b.readiness()).toMatchObject({
        ready: false,
        reason: expect.stringContaining(askedAgainAt(clock + 120_000)),
      });
      expect(fake.gets).toEqual(['media-worker-key-check', 'media-worker-key-check']);
      fake.outOfCredit = undefined;
      clock += 120_000;
      expect(await b.readiness()).toEqual({ ready: true });
    });
  });

  it('fails at once on 400 generation_unsupported_model (error_code spelling read too)', async () => {
    fake.models.delete('sync-3');
    const err = await failure(backend().run(request({ model: 'vendor-lipsync-3' })));
    expect(err.message).toContain('generation_unsupported_model');
    expect(err.message).toContain('refused the request');
    expect(fake.posts).toHaveLength(1);
    fake.forced.push({
      status: 400,
      body: { statusCode: 400, message: ['video is too long'], error_code: 'generation_video_length_exceeded' },
    });
    const again = await failure(backend().run(request({ taskId: 'task-2' })));
    expect(again.message).toContain('generation_video_length_exceeded');
    expect(again.message).toContain('video is too long');
  });

  it('a wrong key is refused by the provider: a 401 from the fake, and the key is in neither the message nor the log', async () => {
    const err = await failure(backend({ apiKey: 'wrong-key-5f3a9c' }).run(request()));
    expect(err.message).toContain('HTTP 401');
    expect(fake.generations).toHaveLength(0);
    expect(fake.refusedKeys).toBe(1);
    expect(logLines.length).toBeGreaterThan(0);
    expect(`${err.message}\n${logLines.join('')}`).not.toContain('wrong-key-5f3a9c');
  });

  it.each([
    ['fail', 'FAILED (generation_face_not_found): No face was found in the video'],
    ['reject', 'REJECTED (generation_rejected)'],
  ] as const)('a %s generation fails the job with its status and code', async (outcome, text) => {
    fake.outcome = outcome;
    const err = await failure(backend().run(request()));
    expect(err.message).toContain(text);
  });

  it('a provider still processing past the limit fails the job', async () => {
    fake.outcome = 'hold';
    const err = await failure(backend().run(request({ timeLimitMs: 300 })));
    // PENDING when the POST itself took the whole limit (a loaded machine), PROCESSING after a poll.
    expect(err.message).toMatch(/left the generation (PENDING|PROCESSING) past the 0\.3 s limit/);
    expect(fake.generations).toHaveLength(1);
  });

  it('an output URL that 404s fails the job', async () => {
    fake.outcome = 'output-404';
    const err = await failure(backend().run(request()));
    expect(err.message).toContain("Could not download the provider's output");
    expect(err.message).toContain('404');
  });

  it('an output that is not a video fails the job', async () => {
    fake.outcome = 'output-not-video';
    const err = await failure(backend().run(request()));
    expect(err.message).toContain('is not an MP4 video we can read');
  });

  it("an output in another container (Matroska) fails the job: the result is stored as the spec's MP4", async () => {
    fake.outcome = 'output-matroska';
    const err = await failure(backend().run(request()));
    expect(err.message).toContain('is not an MP4 video we can read');
    expect(err.message).toContain('Expected one of MP4, M4V but received an MKV file');
    expect(existsSync(path.join(jobDir, 'output.mp4'))).toBe(false);
  });

  it('an answer over the size cap is not read into memory and fails the job', async () => {
    fake.forced.push({
      status: 201,
      body: { id: 'gen-huge', status: 'PENDING', padding: 'x'.repeat(2 * 1024 * 1024) },
    });
    const err = await failure(backend().run(request()));
    expect(err.message).toContain('answered more than 1048576 bytes');
    expect(fake.gets).toEqual([]);
  });

  it('a status answer about another generation fails the job', async () => {
    fake.outcome = 'other-generation';
    const err = await failure(backend().run(request()));
    expect(err.message).toContain('answered generation "gen-1-other" when asked for "gen-1"');
  });

  it('an output URL that redirects to a private address is not followed', async () => {
    fake.outcome = 'output-redirect-private';
    const err = await failure(backend().run(request()));
    expect(err.message).toContain("Could not download the provider's output");
    expect(err.message).toContain(
      'Expected a public address for the video input but received 169.254.169.254 (link-local)',
    );
  });

  it("an output of the wrong length (the video without the audio's length) fails the job", async () => {
    // The fake cuts a 3 s video and 2 s of speech to 2 s; the quote measured the video as 1 s, so 1 s is what cut_off makes.
    const err = await failure(
      backend().run(
        request({
          syncMode: 'cut_off',
          videoSource: `${inputBase}/long.mp4`,
          videoPath: longVideo.path,
          videoInfo: { ...longVideo.info, durationSeconds: 1 },
        }),
      ),
    );
    expect(err.message).toMatch(/lasts 2\.\d+ s but cut_off of these inputs makes 1\.00 s/);
  });

  it('uploads local files with the documented multipart form', async () => {
    const outcome = await backend().run(request({ videoSource: video.path, audioSource: audio.path }));
    expect(fake.generations[0]).toMatchObject({
      upload: true,
      model: 'lipsync-2',
      key: syncIdempotencyKey('task-1'),
      options: { sync_mode: 'cut_off' },
    });
    expect(outcome.durationSeconds).toBeCloseTo(1, 0);
  });

  it('readiness: no key, a refused key (asked once), an accepted key', async () => {
    expect(await backend({ apiKey: undefined }).readiness()).toEqual({
      ready: false,
      reason: 'needs MEDIA_WORKER_SYNC_API_KEY',
    });
    const refused = backend({ apiKey: 'wrong-key-5f3a9c' });
    const verdict = await refused.readiness();
    expect(verdict).toEqual({
      ready: false,
      reason: expect.stringContaining('refused MEDIA_WORKER_SYNC_API_KEY (HTTP 401)'),
    });
    expect(JSON.stringify(verdict)).not.toContain('wrong-key-5f3a9c');
    expect(await refused.readiness()).toMatchObject({ ready: false });
    expect(fake.refusedKeys).toBe(1);
    const good = backend();
    expect(await good.readiness()).toEqual({ ready: true });
    expect(await good.readiness()).toEqual({ ready: true });
    // One key check per backend: the refused one's (counted above) and the good one's.
    expect(fake.gets).toEqual(['media-worker-key-check']);
    expect(fake.refusedKeys).toBe(1);
  });
});
