import { afterEach, describe, expect, it, vi } from 'vitest';
import { JobError } from '../../src/errors.js';
import {
  completedEvent,
  creationTime,
  eventMsgId,
  claimSubject,
  eventSubject,
  hostAndTask,
  failedEvent,
  jobSubject,
  kindOfJobSubject,
  progressMessage,
  progressSubject,
  readTaskId,
  terminalEventSchema,
} from '../../src/protocol/index.js';
import { createProgressPublisher } from '../../src/worker/progress.js';

const timing = {
  createdAt: new Date('2025-01-02T03:04:05.006Z'),
  startedAt: new Date('2025-01-02T03:04:06.000Z'),
  finishedAt: new Date('2025-01-02T03:04:16.250Z'),
  attempt: 2,
  worker: 'w1',
};

describe('terminal events', () => {
  it('a completed event is the spec task object plus timing', () => {
    const event = completedEvent(
      't1',
      'vendor-lipsync-2',
      { creditsUsed: 160, result: { url: 'https://cdn/x.mp4', type: 'video', duration: 15.04 } },
      timing,
    );
    expect(event).toEqual({
      id: 't1',
      model: 'vendor-lipsync-2',
      status: 'completed',
      result: { url: 'https://cdn/x.mp4', type: 'video', duration: 15.04 },
      creditsUsed: 160,
      createdAt: '2025-01-02T03:04:05.006Z',
      startedAt: '2025-01-02T03:04:06.000Z',
      finishedAt: '2025-01-02T03:04:16.250Z',
      durationMs: 10_250,
      attempt: 2,
      worker: 'w1',
    });
    expect(terminalEventSchema.parse(event)).toEqual(event);
  });

  it('music reports vendor/generate-music and mediaType music', () => {
    const event = completedEvent('t2', 'vendor-v5-generate-music', { creditsUsed: 15, result: { songs: [] } }, timing);
    expect(event.model).toBe('vendor/generate-music');
    expect(event.mediaType).toBe('music');
  });

  it('a failed event carries refund, the error body and the refunded credits', () => {
    const event = failedEvent('t3', 'vendor-image-upscale', new JobError('OUTPUT_TOO_LARGE', 'too big'), 40, {
      ...timing,
      startedAt: null,
    });
    expect(event).toMatchObject({
      status: 'failed',
      result: null,
      creditsUsed: 0,
      refund: true,
      creditsRefunded: 40,
      error: { code: 'OUTPUT_TOO_LARGE', status: 422, message: 'too big' },
      startedAt: null,
      durationMs: null,
    });
    expect(terminalEventSchema.parse(event)).toEqual(event);
  });

  it.each([
    [undefined, null],
    [42, null],
    ['not-a-model', 'not-a-model'],
    ['vendor-v5-generate-music', 'vendor/generate-music'],
  ])('a failed event for model %o reports %o', (model, reported) => {
    expect(failedEvent('t', model, new JobError('INVALID_JOB', 'x'), undefined, timing).model).toBe(reported);
  });

  it('takes createdAt from the body when it is a timestamp, else from the stream', () => {
    const stored = new Date('2025-05-05T00:00:00.000Z');
    expect(creationTime('2025-01-01T00:00:00.123Z', stored).toISOString()).toBe('2025-01-01T00:00:00.123Z');
    expect(creationTime('yesterday', stored)).toBe(stored);
    expect(creationTime(undefined, stored)).toBe(stored);
  });
});

describe('progress messages', () => {
  const now = new Date('2025-01-01T00:00:00.000Z');
  it.each([
    [
      { stage: 'frames', done: 25, total: 200, unit: 'frames' },
      { percent: 12.5, done: 25, total: 200, unit: 'frames' },
    ],
    [{ stage: 'frames', done: 1, total: 3 }, { percent: 33.3 }],
    [{ stage: 'encode', percent: 140 }, { percent: 100 }],
    [{ stage: 'download' }, {}],
    [
      { stage: 'frames', done: 3, total: 0 },
      { done: 3, total: 0 },
    ],
  ])('%o -> %o', (progress, expected) => {
    const message = progressMessage('t1', 'vendor-video-upscale', progress, now);
    expect(message).toMatchObject({
      id: 't1',
      model: 'vendor-video-upscale',
      stage: progress.stage,
      at: '2025-01-01T00:00:00.000Z',
      ...expected,
    });
    if (!('percent' in expected)) expect(message.percent).toBeUndefined();
  });
});

describe('progress reporter', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends a new stage at once, then at most one message per interval with the latest value', () => {
    vi.useFakeTimers({ now: new Date('2025-01-01T00:00:00.000Z') });
    const sent: { subject: string; body: { stage: string; done?: number } }[] = [];
    const nc = { publish: (subject: string, data: string) => sent.push({ subject, body: JSON.parse(data) }) };
    const reporter = createProgressPublisher(nc as never, 't9', 'vendor-video-upscale', 1000);
    reporter.report({ stage: 'download' });
    reporter.report({ stage: 'frames', done: 1, total: 100 });
    reporter.report({ stage: 'frames', done: 2, total: 100 });
    reporter.report({ stage: 'frames', done: 3, total: 100 });
    expect(sent.map((m) => [m.body.stage, m.body.done])).toEqual([
      ['download', undefined],
      ['frames', 1],
    ]);
    vi.advanceTimersByTime(1000);
    expect(sent.map((m) => m.body.done)).toEqual([undefined, 1, 3]);
    expect(sent.every((m) => m.subject === 'media.progress.t9')).toBe(true);
    reporter.report({ stage: 'frames', done: 4, total: 100 });
    reporter.close();
    vi.advanceTimersByTime(5000);
    expect(sent).toHaveLength(3);
    // Counted per attempt: the gateway's live events name and order messages by at and seq.
    expect(sent.map((m) => (m.body as { seq?: number }).seq)).toEqual([1, 2, 3]);
  });
});

describe('task ids and subjects', () => {
  const enc = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));
  const headers = (id?: string) => ({
    has: (k: string) => k === 'Nats-Msg-Id' && id !== undefined,
    get: () => id ?? '',
  });

  it.each([
    ['header wins', headers('h1'), { id: 'b1' }, { ok: true, id: 'h1', source: 'header' }],
    ['body id', headers(), { id: 'b1' }, { ok: true, id: 'b1', source: 'body' }],
    ['header and unreadable body', headers('h2'), '{nope', { ok: true, id: 'h2', source: 'header', body: undefined }],
    ['nothing', headers(), { model: 'x' }, { ok: false, reason: 'no Nats-Msg-Id header and no id in the body' }],
    ['not JSON, no header', headers(), 'garbage', { ok: false }],
    ['id with a dot', headers(), { id: 'a.b' }, { ok: false, reason: 'the body\'s id "a.b" is not a task id' }],
    [
      'header with a wildcard',
      headers('a*'),
      { id: 'b' },
      { ok: false, reason: 'the Nats-Msg-Id header "a*" is not a task id' },
    ],
    ['id of 129 characters', headers(), { id: 'x'.repeat(129) }, { ok: false }],
    ['numeric id', headers(), { id: 7 }, { ok: false }],
  ])('%s', (_name, h, body, expected) => {
    expect(readTaskId(h, enc(body))).toMatchObject(expected);
  });

  it('names the subjects of the protocol', () => {
    expect(jobSubject('lipsync', 'vendor-lipsync-2')).toBe('media.jobs.lipsync.vendor-lipsync-2');
    expect(eventSubject('host1', 't1')).toBe('media.events.host1.t1');
    expect(claimSubject('host1', 't1')).toBe('media.claims.host1.t1');
    expect(hostAndTask('media.events', 'media.events.host1.t1')).toEqual({ host: 'host1', taskId: 't1' });
    expect(hostAndTask('media.claims', 'media.claims.host1.t1')).toEqual({ host: 'host1', taskId: 't1' });
    for (const subject of [
      'media.events.t1',
      'media.events.host1.invalid.ab',
      'media.events..t1',
      'media.claims.host1.t1',
    ]) {
      expect(hostAndTask('media.events', subject), subject).toBeUndefined();
    }
    expect(eventMsgId('t1')).toBe('t1:terminal');
    expect(progressSubject('t1')).toBe('media.progress.t1');
    expect(kindOfJobSubject('media.jobs.video.vendor-video-upscale')).toBe('video');
    expect(kindOfJobSubject('media.jobs.gpu.x')).toBeUndefined();
    expect(kindOfJobSubject('media.events.t1')).toBeUndefined();
  });
});
