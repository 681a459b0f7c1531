/**
 * The poll view (src/gateway/poll-view) tried as an attacker and as an operator would, against a real
 * nats-server: a flood of polls of an unknown task id costs one store read, not one per poll, yet
 * the task written later (on another gateway) is served at once; a flood of bogus API keys does
 * not push real ones out of memory; another account never gets the task; a key revoked after a
 * NATS restart (watches re-created) is refused by every gateway.
 */
import { jetstream } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { hashApiKey } from '../../../src/gateway/ids.js';
import { writeIf } from '../../../src/gateway/store/subject-store.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { pendingTask, pollViewFixture, viewReads } from './helpers.js';

const fixture = pollViewFixture('PVATK');
const gateway = fixture.gateway;

describe('the poll view under attack', () => {
  it('a flood of polls of an unknown task id reads the store once; the task, written later elsewhere, is served at once', async () => {
    const a = await gateway();
    const b = await gateway();
    const { account } = await a.store.accounts.create('pva-404', 100);
    for (let i = 0; i < 50; i += 1) expect(await b.view.task(account.id, 't_pva_later')).toBeNull();
    expect(await viewReads(b, 'tasks', 'miss')).toBe(1);
    expect(await viewReads(b, 'tasks', 'hit')).toBe(49);
    // Written on A: B's remembered "none" is replaced by its watch, not served for its lifetime.
    const task = pendingTask(account.id, 't_pva_later');
    await a.store.tasks.ensure(task);
    await waitFor('B to serve the new task', async () => (await b.view.task(account.id, task.id)) !== null, 5_000, 10);
    expect(await b.view.task(account.id, task.id)).toEqual(task);
    // Another account asking for this id gets nothing, before and after it is cached for its owner.
    expect(await b.view.task('acct_pva_other', task.id)).toBeNull();
    expect(await b.view.task('acct_pva_other', task.id)).toBeNull();
  }, 60_000);

  it('a flood of unknown API keys does not push a real key out of memory, and a key made later elsewhere is accepted at once', async () => {
    const a = await gateway();
    const b = await gateway();
    const { account, apiKey: real } = await a.store.accounts.create('pva-keys', 100);
    expect(await b.view.accountOfKey(real)).toBe(account.id);
    // More bogus keys than the cache holds (100 here), as anyone may send before any account's limit.
    for (let i = 0; i < 150; i += 1) expect(await b.view.accountOfKey(`mwk_bogus_${i}`)).toBeNull();
    const hits = await viewReads(b, 'keys', 'hit');
    expect(await b.view.accountOfKey(real)).toBe(account.id);
    expect(await viewReads(b, 'keys', 'hit')).toBe(hits + 1);
    const later = `mwk_${'z'.repeat(40)}`;
    expect(await b.view.accountOfKey(later)).toBeNull();
    await writeIf(
      jetstream(a.nc),
      a.store.names.keySubject(hashApiKey(later)),
      { accountId: account.id, createdAt: new Date().toISOString() },
      0,
    );
    await waitFor('B to accept the new key', async () => (await b.view.accountOfKey(later)) === account.id, 5_000, 10);
  }, 60_000);

  it('a key revoked after a NATS restart (the watches re-created) is refused by both gateways', async () => {
    const a = await gateway();
    const b = await gateway();
    const { account, apiKey } = await a.store.accounts.create('pva-restart', 100);
    expect(await b.view.accountOfKey(apiKey)).toBe(account.id);
    await fixture.nats().restart(300);
    // Back and live again: B serves the key from memory (a hit) once more.
    await waitFor(
      'B live again after the restart',
      async () => {
        const hits = await viewReads(b, 'keys', 'hit');
        return (
          (await b.view.accountOfKey(apiKey).catch(() => null)) === account.id &&
          (await viewReads(b, 'keys', 'hit')) > hits
        );
      },
      30_000,
      100,
    );
    const keyId = (await a.store.accounts.listKeys(account.id))[0]!.keyId;
    await a.store.accounts.revokeKey(account.id, keyId);
    await waitFor(
      'both to refuse the revoked key',
      async () => (await a.view.accountOfKey(apiKey)) === null && (await b.view.accountOfKey(apiKey)) === null,
      5_000,
      10,
    );
  }, 90_000);
});
