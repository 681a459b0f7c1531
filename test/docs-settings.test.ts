/**
 * Every setting a document names exists (issue 33, item 7): each environment-variable-like name in
 * README.md and docs/*.md is a row of the settings reference in docs/configuration.md, which
 * `npm run docs:config` generates from the settings tables (test/docs.test.ts checks it is
 * current). The few names of that shape that are not settings are listed here with what they are.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/paths.js';
import { documents } from './helpers/documents.js';

const NOT_SETTINGS = new Set([
  // The gateway's streams (GATEWAY_STREAM_PREFIX + name).
  'GATEWAY_ACCOUNTS',
  'GATEWAY_LEDGER',
  'GATEWAY_TASKS',
  'GATEWAY_WEBHOOKS',
  'GATEWAY_IDEMPOTENCY',
  // Old names, documented as renamed or replaced (MuseTalk's: src/kinds/lipsync/settings.ts LIPSYNC_RETIRED_SETTINGS).
  'MEDIA_WORKER_RESULTS_DIR',
  'MEDIA_WORKER_MUSETALK_MODEL',
  // The worker's settings table, named as code.
  'WORKER_SETTINGS',
  // The test-only kill point (src/worker/kill-point.ts), on purpose in no settings table.
  'MEDIA_WORKER_TEST_KILL_AT',
  // A client's, not the service's: `media-worker tasks watch` and the Python example read them.
  'MEDIA_WORKER_API_KEY',
  'MEDIA_WORKER_URL',
]);

describe('setting names in README.md and docs/*.md', () => {
  it('are all in the settings reference', async () => {
    const reference = await readFile(path.join(PACKAGE_ROOT, 'docs', 'configuration.md'), 'utf8');
    const settings = new Set([...reference.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!));
    expect(settings.size).toBeGreaterThan(50);
    const unknown: string[] = [];
    for (const name of await documents()) {
      const text = await readFile(path.join(PACKAGE_ROOT, name), 'utf8');
      for (const [found] of text.matchAll(/\b(?:WORKER|GATEWAY|RESULTS|MEDIA_WORKER)_[A-Z0-9_]+\b/g)) {
        if (!settings.has(found) && !NOT_SETTINGS.has(found)) unknown.push(`${name}: ${found}`);
      }
    }
    expect(unknown).toEqual([]);
  });
});
