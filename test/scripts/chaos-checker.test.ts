/**
 * The partition suite's checker (scripts/chaos/checker.ts): each count it must report as 0 is
 * counted when the ledger, the tasks, the events or the clients' log show it.
 */
import { describe, expect, it } from 'vitest';
import { check, type CheckedTask, type ClientOp } from '../../scripts/chaos/checker.js';
import type { LedgerEntry } from '../../src/gateway/index.js';

const job = (id: string) => ({
  id,
  model: 'vendor-image-upscale',
  input: {},
  credits: 20,
  createdAt: '2026-01-01T00:00:00Z',
});
const debit = (taskId: string, balance: number): LedgerEntry => ({
  type: 'debit',
  amount: 20,
  balance,
  at: '',
  taskId,
  kind: 'image',
  job: job(taskId),
  extras: {},
});
const refund = (taskId: string, balance: number): LedgerEntry => ({
  type: 'refund',
  amount: 20,
  balance,
  at: '',
  taskId,
  reason: 'CANCELLED',
});
const open: LedgerEntry = { type: 'open', amount: 100, balance: 100, at: '' };
const op = (key: string, ids: string[], outcome: ClientOp['outcome'] = 'acknowledged'): ClientOp => ({
  kind: 'submit',
  key,
  accountId: 'a',
  acceptedIds: ids,
  attempts: 1,
  outcome,
});
const task = (id: string, status: string, over: Partial<CheckedTask> = {}): CheckedTask => ({
  id,
  accountId: 'a',
  status,
  eventHosts: ['host1'],
  firstClaim: 'host1',
  webhooks: 1,
  wantsWebhook: true,
  ...over,
});

describe('the partition checker', () => {
  it('reports zeros for a clean run', () => {
    const v = check(
      [op('k1', ['t1']), op('k2', ['t2', 't2'])],
      [{ id: 'a', apiBalance: 80, entries: [open, debit('t1', 80), debit('t2', 60), refund('t2', 80)] }],
      [task('t1', 'completed'), task('t2', 'failed')],
      [3.5, 12],
    );
    expect(v).toMatchObject({
      acknowledged: 2,
      lost: 0,
      double_charged: 0,
      multiple_events: 0,
      ledger_mismatches: 0,
      stuck_after_heal: 0,
      recovery_seconds_max: 12,
      problems: [],
    });
    // t2 failed with nobody having asked to cancel it: told, not a fault count.
    expect(v.failed_uncancelled).toBe(1);
    expect(v.notes).toEqual(['t2: failed (refunded), no cancel sent']);
    const cancelled = check(
      [
        op('k2', ['t2']),
        {
          kind: 'cancel',
          key: 'c2',
          accountId: 'a',
          taskId: 't2',
          acceptedIds: ['t2'],
          attempts: 1,
          outcome: 'acknowledged',
        },
      ],
      [{ id: 'a', apiBalance: 100, entries: [open, debit('t2', 80), refund('t2', 100)] }],
      [task('t2', 'failed')],
      [1],
    );
    expect(cancelled.failed_uncancelled).toBe(0);
  });

  it('counts a lost task, a double charge, a charge nobody was told of, two events, a wrong balance and a stuck task', () => {
    const v = check(
      [op('lost', ['t9']), op('twice', ['t1', 't3']), op('gave-up', [], 'unanswered')],
      [
        {
          id: 'a',
          apiBalance: 50,
          entries: [open, debit('t1', 80), debit('t1', 60), debit('t3', 40), debit('t4', 20)],
        },
      ],
      [
        task('t1', 'completed', { eventHosts: ['host1', 'host2'] }),
        task('t3', 'pending'),
        task('t4', 'completed', { webhooks: 0 }),
      ],
      [31],
    );
    expect(v.lost).toBe(1);
    // t1 twice, key "twice" named two tasks, t4 charged with no acknowledgement.
    expect(v.double_charged).toBe(3);
    expect(v.multiple_events).toBe(1);
    expect(v.ledger_mismatches).toBe(1);
    // t3 pending and the unanswered operation.
    expect(v.stuck_after_heal).toBe(2);
    expect(v.webhooks_missing).toBe(1);
    expect(v.recovery_seconds_max).toBe(31);
  });
});
