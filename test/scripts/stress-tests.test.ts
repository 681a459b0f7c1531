/**
 * scripts/stress-tests.ts reads vitest's JSON report: one line per failed test, named by its file,
 * and a file that failed outside its tests (a hook, an import) named as the file.
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { failuresOfReport, TIMING_SENSITIVE_FILES } from '../../scripts/stress-tests.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

describe('the stress run', () => {
  it('names each failed test with its file and round, and a file that failed outside its tests', () => {
    const report = JSON.stringify({
      testResults: [
        {
          name: '/repo/test/gateway/webhooks/queue.test.ts',
          status: 'failed',
          assertionResults: [
            {
              fullName: 'the webhook queue 429 waits',
              status: 'failed',
              failureMessages: ['\nAssertionError: expected 1 to be 2\n    at x'],
            },
            { fullName: 'the webhook queue gives up', status: 'passed', failureMessages: [] },
          ],
        },
        {
          name: '/repo/test/serve.test.ts',
          status: 'failed',
          message: 'Hook timed out in 120000ms',
          assertionResults: [],
        },
        {
          name: '/repo/test/worker/daemon.test.ts',
          status: 'passed',
          assertionResults: [{ fullName: 'a', status: 'passed' }],
        },
      ],
    });
    expect(failuresOfReport(report, 2, '/repo')).toEqual([
      {
        round: 2,
        file: 'test/gateway/webhooks/queue.test.ts',
        test: 'the webhook queue 429 waits',
        message: 'AssertionError: expected 1 to be 2',
      },
      { round: 2, file: 'test/scenarios/serve/serve.test.ts', test: '(file)', message: 'Hook timed out in 120000ms' },
    ]);
  });

  it("refuses a report that is not vitest's", () => {
    expect(() => failuresOfReport('{"files": []}', 1, '/repo')).toThrow();
  });

  it('runs files that exist', async () => {
    for (const file of TIMING_SENSITIVE_FILES) await access(path.join(PACKAGE_ROOT, file));
  });
});
