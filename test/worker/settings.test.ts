import { describe, expect, it } from 'vitest';
import {
  WORKER_SETTINGS,
  WorkerSettingsError,
  parseWorkerSettings,
  workerSettingsFromEnv,
  workerSettingsReference,
} from '../../src/worker/settings.js';

describe('worker settings', () => {
  it('has the documented defaults', () => {
    const s = parseWorkerSettings();
    expect(s).toMatchObject({
      natsUrl: 'nats://127.0.0.1:4222',
      jobsStream: 'MEDIA_JOBS',
      eventsStream: 'MEDIA_EVENTS',
      advisoriesStream: 'MEDIA_JOBS_ADVISORIES',
      consumerPrefix: 'media-worker',
      concurrency: { image: 1, video: 1, lipsync: 1, music: 0 },
      ackWaitMs: 30_000,
      heartbeatMs: 10_000,
      maxDeliver: 5,
      nakDelaysMs: [10_000, 60_000, 300_000],
      watchdogMs: { image: 900_000, video: 1_800_000, lipsync: 240_000, music: 600_000 },
      drainGraceMs: 60_000,
      upscaleResultLifetimeDays: 7,
      healthPort: 9464,
    });
    expect(s.natsCredsFile).toBeUndefined();
    expect(s.publicBaseUrl).toBeUndefined();
  });

  it('reads the environment spelling of every kind of value', () => {
    const s = workerSettingsFromEnv({
      NATS_URL: 'nats://a:4222,nats://b:4222',
      WORKER_CONCURRENCY: 'image=3, lipsync=0',
      WORKER_WATCHDOG_MS: 'lipsync=120000',
      WORKER_NAK_DELAYS_MS: '5, 50',
      WORKER_ACK_WAIT_MS: '2000',
      WORKER_HEARTBEAT_MS: '500',
      RESULTS_BASE_URL: 'https://cdn.example.com/results',
      NATS_TOKEN: '',
    });
    expect(s.concurrency).toEqual({ image: 3, video: 1, lipsync: 0, music: 0, 'music-video': 1 });
    expect(s.watchdogMs.lipsync).toBe(120_000);
    expect(s.watchdogMs.video).toBe(1_800_000);
    expect(s.nakDelaysMs).toEqual([5, 50]);
    expect(s.ackWaitMs).toBe(2000);
    expect(s.publicBaseUrl).toBe('https://cdn.example.com/results');
    expect(s.natsToken).toBeUndefined();
  });

  it('accepts typed values from code', () => {
    const s = parseWorkerSettings({
      concurrency: { video: 2 },
      nakDelaysMs: [1, 2],
      ackWaitMs: 5000,
      heartbeatMs: 1000,
    });
    expect(s.concurrency).toEqual({ image: 1, video: 2, lipsync: 1, music: 0, 'music-video': 1 });
    expect(s.nakDelaysMs).toEqual([1, 2]);
  });

  it.each([
    [
      { WORKER_ACK_WAIT_MS: 'soon' },
      'Invalid setting WORKER_ACK_WAIT_MS: Expected an integer of at least 1000 but received "soon"',
    ],
    [
      { WORKER_CONCURRENCY: 'gpu=2' },
      'Invalid setting WORKER_CONCURRENCY: Expected <kind>=<a non-negative integer> with kind one of image, video, lipsync, music, music-video but received "gpu=2"',
    ],
    [
      { WORKER_NAK_DELAYS_MS: '1,x' },
      'Invalid setting WORKER_NAK_DELAYS_MS: Expected a comma-separated list of non-negative integers but received "1,x"',
    ],
    [
      { MEDIA_JOBS_STREAM: 'media.jobs' },
      'Invalid setting MEDIA_JOBS_STREAM: Expected 1 to 64 characters of A-Z, a-z, 0-9, "_" or "-" but received "media.jobs"',
    ],
    [
      { WORKER_HEALTH_PORT: '70000' },
      'Invalid setting WORKER_HEALTH_PORT: Expected a port number from 0 to 65535 but received "70000"',
    ],
    [
      { RESULTS_BASE_URL: 'cdn/results' },
      'Invalid setting RESULTS_BASE_URL: Expected an absolute URL but received "cdn/results"',
    ],
    [
      { WORKER_HEARTBEAT_MS: '30000' },
      'Invalid setting WORKER_HEARTBEAT_MS: Expected WORKER_HEARTBEAT_MS to be below WORKER_ACK_WAIT_MS (30000) but received 30000',
    ],
    [
      { WORKER_CLAIM_LEASE_MS: '500' },
      'Invalid setting WORKER_CLAIM_LEASE_MS: Expected an integer from 1000 to 600000 but received "500"',
    ],
    [
      { WORKER_CLAIM_LEASE_MS: '10000' },
      'Invalid setting WORKER_CLAIM_LEASE_MS: Expected WORKER_CLAIM_LEASE_MS to be above WORKER_HEARTBEAT_MS (10000) but received 10000',
    ],
  ])('refuses %o with a message naming the variable', (env, message) => {
    expect(() => workerSettingsFromEnv(env)).toThrow(WorkerSettingsError);
    expect(() => workerSettingsFromEnv(env)).toThrow(message);
  });

  it('documents every setting with its environment variable', () => {
    const reference = workerSettingsReference();
    for (const spec of Object.values(WORKER_SETTINGS)) expect(reference).toContain(`| \`${spec.env}\` |`);
    expect(new Set(Object.values(WORKER_SETTINGS).map((s) => s.env)).size).toBe(Object.keys(WORKER_SETTINGS).length);
  });
});
