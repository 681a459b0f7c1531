/**
 * The money and event checks of scripts/nats-cluster.ts, pure: from each account's ledger entries
 * and API balance and each task's status and event count, what does not add up. Every balance
 * equals the sum of its ledger; each entry's running balance is right; each task is debited
 * once, refunded at most once and exactly when it failed; each task has exactly one event, from
 * the host whose claim of it was stored first (the only host whose event settles it).
 */
import type { LedgerEntry } from '../src/gateway/index.js';

export interface AuditedAccount {
  id: string;
  /** What GET /api/v1/balance answered at the end. */
  apiBalance: number;
  entries: LedgerEntry[];
}

export interface AuditedTask {
  id: string;
  accountId: string;
  status: string;
  /** The hosts of the task's events (`media.events.<host>.<task>`, one message each). */
  eventHosts: string[];
  /** The host whose claim of the task was stored first, or null when none was. */
  firstClaim: string | null;
}

export interface Audit {
  debits: number;
  refunds: number;
  topups: number;
  problems: string[];
}

export function auditLedger(accounts: readonly AuditedAccount[], tasks: readonly AuditedTask[]): Audit {
  const problems: string[] = [];
  const debits = new Map<string, number>();
  const refunds = new Map<string, number>();
  let topups = 0;
  for (const account of accounts) {
    let sum = 0;
    for (const [i, entry] of account.entries.entries()) {
      sum += entry.type === 'debit' ? -entry.amount : entry.amount;
      if (entry.balance !== sum)
        problems.push(
          `${account.id}: entry ${i + 1} (${entry.type}) says balance ${entry.balance} but the entries sum to ${sum}`,
        );
      if (entry.type === 'topup') topups += 1;
      if (entry.type === 'debit') debits.set(entry.taskId, (debits.get(entry.taskId) ?? 0) + 1);
      if (entry.type === 'refund') refunds.set(entry.taskId, (refunds.get(entry.taskId) ?? 0) + 1);
    }
    if (account.apiBalance !== sum)
      problems.push(`${account.id}: the API says ${account.apiBalance} credits but the ledger sums to ${sum}`);
  }
  for (const task of tasks) {
    const d = debits.get(task.id) ?? 0;
    const r = refunds.get(task.id) ?? 0;
    if (d !== 1) problems.push(`${task.id}: debited ${d} times`);
    if (r > 1) problems.push(`${task.id}: refunded ${r} times`);
    if (task.status === 'failed' && r !== 1) problems.push(`${task.id}: failed but refunded ${r} times`);
    if (task.status === 'completed' && r !== 0) problems.push(`${task.id}: completed but refunded`);
    if (task.status !== 'completed' && task.status !== 'failed') problems.push(`${task.id}: ended ${task.status}`);
    if (task.eventHosts.length !== 1)
      problems.push(`${task.id}: ${task.eventHosts.length} events (${task.eventHosts.join(', ')})`);
    else if (task.eventHosts[0] !== task.firstClaim)
      problems.push(
        `${task.id}: its event is from ${task.eventHosts[0]} but ${String(task.firstClaim)} claimed it first`,
      );
  }
  const known = new Set(tasks.map((t) => t.id));
  for (const id of debits.keys())
    if (!known.has(id)) problems.push(`${id}: debited but never accepted by the API (an unseen task)`);
  return {
    debits: [...debits.values()].reduce((a, b) => a + b, 0),
    refunds: [...refunds.values()].reduce((a, b) => a + b, 0),
    topups,
    problems,
  };
}
