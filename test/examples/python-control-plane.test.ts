/**
 * The second-language check: examples/python/control_plane.py (nats-py, written from
 * docs/protocol.md) drives discovery, quote, job, duplicate, cancel and events against a real
 * nats-server and a real worker (in-process, with the test-double executor). Skipped, saying why,
 * where python3 or nats-py is not installed (`pip install nats-py`).
 */
import { execFile, execFileSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { startTestWorker, type TestWorker } from '../worker/helpers/in-process.js';
import { startNatsServer, type TestNatsServer } from '../worker/helpers/nats-server.js';

interface Report {
  problems: string[];
  image_workers: string[];
  quote: unknown;
  unserved_quote: unknown;
  first_publish_duplicate: boolean;
  second_publish_duplicate: boolean;
  cancel: unknown;
  cancel_after_completion: unknown;
  events: Record<string, { _protocol: string | null }[]>;
}

const SCRIPT = path.join(PACKAGE_ROOT, 'examples', 'python', 'control_plane.py');

function pythonMissing(): string | undefined {
  try {
    execFileSync('python3', ['-c', 'import nats'], { stdio: 'ignore', timeout: 20_000 });
    return undefined;
  } catch {
    return 'python3 with nats-py is not installed (pip install nats-py)';
  }
}

const missing = pythonMissing();

describe.skipIf(missing !== undefined)(
  `the Python control plane example${missing ? ` (skipped: ${missing})` : ''}`,
  () => {
    let server: TestNatsServer;
    let worker: TestWorker;

    beforeAll(async () => {
      server = await startNatsServer();
      const quote = async (job: { model: string; input: unknown }) => ({
        model: job.model,
        creditsUsed: 20,
        input: job.input,
      });
      worker = await startTestWorker(
        server.url,
        { concurrency: 'image=2,video=0,lipsync=0,music=0,music-video=0' },
        quote as never,
      );
    });

    afterAll(async () => {
      await worker?.stop();
      await server?.close();
    });

    it('quotes, publishes a job and its duplicate, cancels a running one, and reads exactly one event per task', async () => {
      const run = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const args = [SCRIPT, '--nats-url', server.url, '--image-url', 'https://media.test/py.png?sleep=200'];
        args.push(
          '--slow-image-url',
          'https://media.test/slow.png?sleep=30000',
          '--cancel-after',
          '0.5',
          '--timeout',
          '30',
        );
        const child = execFile('python3', args, { timeout: 60_000 }, (_err, stdout, stderr) =>
          resolve({ code: child.exitCode, stdout, stderr }),
        );
      });
      expect(run.stderr).toBe('');
      const report = JSON.parse(run.stdout) as Report;
      expect(report.problems).toEqual([]);
      expect(run.code).toBe(0);
      expect(report.image_workers).toEqual([worker.settings.natsName]);
      expect(report.quote).toMatchObject({ creditsUsed: 20 });
      expect(report.unserved_quote).toMatchObject({ error: { code: 'MODEL_UNAVAILABLE', status: 503 } });
      expect([report.first_publish_duplicate, report.second_publish_duplicate]).toEqual([false, true]);
      expect(report.cancel).toMatchObject({ cancelled: true, code: 'CANCELLED' });
      expect(report.cancel_after_completion).toMatchObject({ cancelled: false, status: 'completed' });
      const events = Object.values(report.events);
      expect(events.map((list) => list.length)).toEqual([1, 1]);
      for (const list of events) expect(list[0]?._protocol).toBe('2.1');
      // The worker ran the completed task once (the duplicate publish was dropped) and started the cancelled one.
      expect(worker.records.map((r) => r.taskId).sort()).toEqual(Object.keys(report.events).sort());
    });
  },
);
