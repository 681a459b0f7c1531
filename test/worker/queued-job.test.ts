/**
 * The lookup of a queued task's job message (src/worker/queued-job.ts) against a real nats-server:
 * found among others by its Nats-Msg-Id or its body's id, narrowed to its model's subject, and
 * bounded (past the bound, not found).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseWorkerSettings } from '../../src/worker/settings.js';
import { ensureTopology } from '../../src/worker/topology.js';
import { findQueuedJob, queuedJobFilter } from '../../src/worker/queued-job.js';
import { controlPlane, type ControlPlane } from './helpers/jetstream.js';
import { FAST_SETTINGS, imageJob } from './helpers/in-process.js';
import { startNatsServer, type TestNatsServer } from './helpers/nats-server.js';

let server: TestNatsServer;
let cp: ControlPlane;

beforeAll(async () => {
  server = await startNatsServer();
  cp = await controlPlane(server.url, { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' });
  await ensureTopology(cp.jsm, parseWorkerSettings({ ...FAST_SETTINGS, natsUrl: server.url }));
});

afterAll(async () => {
  await cp?.close();
  await server?.close();
});

describe('a queued job, looked up by task id', () => {
  it('is found among other jobs by header or body id, with its createdAt, model and credits; elsewhere or past the bound, not', async () => {
    const lookup = { jsm: cp.jsm, jobsStream: 'MEDIA_JOBS' };
    for (let i = 0; i < 5; i++) await cp.publishJob('image', 'vendor-image-upscale', imageJob(`ahead-${i}`));
    const before = Date.now();
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('wanted', '', { credits: 12 }));
    await cp.publishJob('image', 'vendor-image-upscale', imageJob('no-header', '', { createdAt: '2025-03-01T12:00:00.000Z' }), { msgId: null });

    const found = await findQueuedJob(lookup, 'wanted', 'vendor-image-upscale');
    expect(found).toMatchObject({ model: 'vendor-image-upscale', credits: 12 });
    // No createdAt in the body: when the stream stored it.
    expect(found!.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(found!.createdAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await findQueuedJob(lookup, 'wanted', undefined)).toEqual(found);
    expect(await findQueuedJob(lookup, 'no-header', undefined)).toEqual({ model: 'vendor-image-upscale', credits: undefined, createdAt: new Date('2025-03-01T12:00:00.000Z') });

    expect(await findQueuedJob(lookup, 'wanted', 'vendor-video-upscale')).toBeNull();
    expect(await findQueuedJob(lookup, 'absent', undefined)).toBeNull();
    expect(await findQueuedJob({ ...lookup, maxMessages: 5 }, 'wanted', undefined)).toBeNull();
    expect(await findQueuedJob({ ...lookup, maxMessages: 6 }, 'wanted', undefined)).not.toBeNull();
  });

  it('searches the model\'s subject when the cancel names a known model, else every job subject', () => {
    expect(queuedJobFilter('vendor-lipsync-2')).toBe('media.jobs.lipsync.vendor-lipsync-2');
    expect(queuedJobFilter('vendor-nothing')).toBe('media.jobs.>');
    expect(queuedJobFilter(undefined)).toBe('media.jobs.>');
  });
});
