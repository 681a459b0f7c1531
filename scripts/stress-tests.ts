/**
 * Runs the suite's timing-sensitive test files several times under CPU stress and reports each
 * failure with its file (issue 56): a test that waits for a side effect instead of the state it
 * asserts passes on a quiet machine and fails on CI's loaded one. The stress is busy loops (two by
 * default: CI's two cores, both taken), started before the first round and stopped after the last.
 * Each round is one `vitest run` of the files, side by side as `npm test` runs them.
 *
 *   npm run test:stress -- [--rounds 3] [--loops 2] [FILE...]
 *
 * Exit status 0 when every round passed, 1 when any test failed (each printed as `file > test`).
 * The runs and what they found are kept in docs/testing.md ("Under stress").
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { z } from 'zod';

/**
 * The files that wait on timers, retries, child processes or several nats-server processes: chosen
 * by reading them (waits for a state, queued deliveries, leases, restarts, reconnects), not by speed.
 */
export const TIMING_SENSITIVE_FILES: readonly string[] = [
  'test/gateway/webhooks/queue.test.ts',
  'test/gateway/webhooks/delivery.attack.test.ts',
  'test/scenarios/gateway/webhooks.e2e.test.ts',
  'test/scenarios/gateway/tracing.e2e.test.ts',
  'test/scenarios/gateway/nats-permissions.test.ts',
  'test/scenarios/gateway/gateway.e2e.test.ts',
  'test/gateway/poll-view.test.ts',
  'test/gateway/store/ledger.test.ts',
  'test/gateway/idempotency.test.ts',
  'test/gateway/quote-client.test.ts',
  'test/scenarios/gateway/distrust.e2e.test.ts',
  'test/gateway/debit-reconciler.test.ts',
  'test/gateway/event-reconciler.test.ts',
  'test/scenarios/gateway/clustered-writes.test.ts',
  'test/scenarios/gateway/cancel-delivers-nothing.e2e.test.ts',
  'test/worker/daemon.test.ts',
  'test/worker/discovery.test.ts',
  'test/scenarios/worker/processes.test.ts',
  'test/worker/availability.test.ts',
  'test/scenarios/serve/serve-operations.test.ts',
  'test/scenarios/protocol/silent-server.test.ts',
];

/** The part of vitest's JSON report (`--reporter=json`) read here. */
const jsonReportSchema = z.object({
  testResults: z.array(
    z.object({
      name: z.string(),
      status: z.string(),
      message: z.string().optional(),
      assertionResults: z
        .array(z.object({ fullName: z.string(), status: z.string(), failureMessages: z.array(z.string()).default([]) }))
        .default([]),
    }),
  ),
});

export interface StressFailure {
  round: number;
  /** Relative to the repository root. */
  file: string;
  /** The failed test's full name, or `(file)` when the file failed outside a test (a hook, an import). */
  test: string;
  /** The first line of the failure message. */
  message: string;
}

/** The failures of one round's JSON report. Pure: the report's text in, one entry per failed test out. */
export function failuresOfReport(reportJson: string, round: number, root: string): StressFailure[] {
  const report = jsonReportSchema.parse(JSON.parse(reportJson));
  const failures: StressFailure[] = [];
  for (const file of report.testResults) {
    const relative = path.relative(root, file.name) || file.name;
    const failed = file.assertionResults.filter((a) => a.status === 'failed');
    for (const a of failed)
      failures.push({ round, file: relative, test: a.fullName, message: firstLine(a.failureMessages[0] ?? '') });
    if (failed.length === 0 && file.status === 'failed')
      failures.push({ round, file: relative, test: '(file)', message: firstLine(file.message ?? '') });
  }
  return failures;
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .find((l) => l.trim() !== '')
      ?.trim() ?? ''
  );
}

/** A CPU busy loop in a process of its own, so vitest's workers compete with it for the cores. */
function busyLoop(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

async function runRound(
  root: string,
  files: readonly string[],
  round: number,
  dir: string,
): Promise<{ failures: StressFailure[]; seconds: number; exitCode: number }> {
  const reportPath = path.join(dir, `round-${round}.json`);
  const started = Date.now();
  const vitest = path.join(root, 'node_modules', '.bin', 'vitest');
  const exitCode = await new Promise<number>((resolve, reject) => {
    const child = spawn(
      vitest,
      ['run', '--reporter=dot', '--reporter=json', `--outputFile.json=${reportPath}`, ...files],
      { cwd: root, stdio: 'inherit' },
    );
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  const seconds = (Date.now() - started) / 1000;
  let failures: StressFailure[];
  try {
    failures = failuresOfReport(await readFile(reportPath, 'utf8'), round, root);
  } catch (err) {
    // No report at all (vitest died): the round failed as a whole.
    failures = [{ round, file: '(vitest)', test: '(round)', message: `no JSON report: ${(err as Error).message}` }];
  }
  if (exitCode !== 0 && failures.length === 0)
    failures.push({
      round,
      file: '(vitest)',
      test: '(round)',
      message: `vitest exited ${exitCode} with no failed test in its report`,
    });
  return { failures, seconds, exitCode };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { rounds: { type: 'string', default: '3' }, loops: { type: 'string', default: '2' } },
  });
  const rounds = Number(values.rounds);
  const loops = Number(values.loops);
  if (!Number.isInteger(rounds) || rounds < 1)
    throw new Error(`--rounds must be a whole number of at least 1, not ${values.rounds}`);
  if (!Number.isInteger(loops) || loops < 0)
    throw new Error(`--loops must be a whole number of at least 0, not ${values.loops}`);
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  const files = positionals.length > 0 ? positionals : TIMING_SENSITIVE_FILES;

  const dir = await mkdtemp(path.join(os.tmpdir(), 'media-worker-stress-'));
  const busy = Array.from({ length: loops }, busyLoop);
  const stopBusy = (): void => {
    for (const b of busy) b.kill('SIGKILL');
  };
  process.once('SIGINT', () => {
    stopBusy();
    process.exit(130);
  });
  const all: StressFailure[] = [];
  try {
    console.error(
      `stress: ${files.length} files x ${rounds} rounds, ${loops} busy loops, load average ${os.loadavg()[0]!.toFixed(1)} at the start`,
    );
    for (let round = 1; round <= rounds; round++) {
      const { failures, seconds } = await runRound(root, files, round, dir);
      all.push(...failures);
      console.error(
        `stress: round ${round}/${rounds}: ${failures.length} failed, ${seconds.toFixed(0)} s, load average ${os.loadavg()[0]!.toFixed(1)}`,
      );
    }
  } finally {
    stopBusy();
    await rm(dir, { recursive: true, force: true });
  }
  for (const f of all) console.log(`FAIL round ${f.round} ${f.file} > ${f.test}: ${f.message}`);
  console.log(`stress: ${all.length} failures in ${rounds} rounds of ${files.length} files`);
  process.exitCode = all.length > 0 ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`stress: ${(err as Error).message}`);
    process.exit(2);
  });
}
