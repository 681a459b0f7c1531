/**
 * A worker in the test's own process (for everything except killing or signalling it), with the
 * test-double executor, its own metrics registry and a health server on a free port.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { WorkerMetrics } from '../../../src/worker/metrics.js';
import { parseWorkerSettings, type WorkerSettings, type WorkerSettingsInput } from '../../../src/worker/settings.js';
import type { QuoteFunction } from '../../../src/worker/types.js';
import { startWorker, type WorkerDeps, type WorkerHandle } from '../../../src/worker/worker.js';
import { createTestDoubleExecutor, type ExecutionRecord } from '../fixtures/test-double-executor.js';
import { provisionWorker } from '../../helpers/provision-worker.js';

/** Short timings so that redeliveries and retries happen within a test. */
export const FAST_SETTINGS: WorkerSettingsInput = {
  ackWaitMs: 3000,
  heartbeatMs: 500,
  pullExpiresMs: 1000,
  nakDelaysMs: '100',
  maxDeliver: 3,
  drainGraceMs: 5000,
  publishDeadlineMs: 30_000,
  concurrency: 'image=2,video=1,lipsync=1,music=1',
  healthPort: 0,
  healthHost: '127.0.0.1',
  progressIntervalMs: 0,
};

export interface TestWorker {
  handle: WorkerHandle;
  settings: WorkerSettings;
  records: ExecutionRecord[];
  metrics: WorkerMetrics;
  stop(): Promise<void>;
}

let counter = 0;

export async function startTestWorker(
  url: string,
  overrides: WorkerSettingsInput = {},
  quote?: QuoteFunction,
  deps: Partial<Pick<WorkerDeps, 'readiness' | 'sweepLeftovers' | 'executor'>> & {
    /** Credentials allowed to provision, where the worker's own may only bind (test/helpers/role-nats.ts). */
    provisionAs?: WorkerSettingsInput;
  } = {},
): Promise<TestWorker> {
  const resultsDir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-results-'));
  counter += 1;
  const settings = parseWorkerSettings({
    ...FAST_SETTINGS,
    natsUrl: url,
    natsName: `test-worker-${process.pid}-${counter}`,
    resultsDir,
    ...overrides,
  });
  const { executor, records } = createTestDoubleExecutor();
  const metrics = new WorkerMetrics();
  const logger = pino({ level: process.env.TEST_WORKER_LOG_LEVEL ?? 'silent' });
  // What the operator's `media-worker provision` does; the worker itself only binds.
  await provisionWorker(
    deps.provisionAs === undefined
      ? settings
      : parseWorkerSettings({ ...FAST_SETTINGS, natsUrl: url, resultsDir, ...overrides, ...deps.provisionAs }),
  );
  const handle = await startWorker(settings, {
    logger,
    metrics,
    ...(quote ? { quote } : {}),
    version: '0.1.0',
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    ...(deps.sweepLeftovers ? { sweepLeftovers: deps.sweepLeftovers } : {}),
    executor: deps.executor ?? executor,
  });
  return {
    handle,
    settings,
    records,
    metrics,
    async stop() {
      await handle.stop();
      await fs.rm(resultsDir, { recursive: true, force: true });
    },
  };
}

export function imageJob(id: string, query = '', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    model: 'vendor-image-upscale',
    input: { image_url: `https://media.test/${id}.png${query ? `?${query}` : ''}` },
    ...extra,
  };
}

export function lipsyncJob(id: string, query = ''): Record<string, unknown> {
  return {
    id,
    model: 'vendor-lipsync-2',
    input: {
      video_url: `https://media.test/${id}.mp4${query ? `?${query}` : ''}`,
      audio_url: 'https://media.test/a.wav',
    },
  };
}
