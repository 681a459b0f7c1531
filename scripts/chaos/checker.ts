/**
 * The partition suite's verdict, pure: from the ledger, the tasks, the events, the webhooks received
 * and the clients' own log of what they sent and were answered, the counts that must be 0. The
 * suite prints the result as its last line (one JSON object).
 */
import type { LedgerEntry } from '../../src/gateway/index.js';

/** One operation of a client: every attempt sent with the same Idempotency-Key. */
export interface ClientOp {
  kind: 'submit' | 'cancel';
  key: string;
  accountId: string;
  /** For a cancel: the task it cancels. */
  taskId?: string;
  /** The task id each 2xx answer named, in order. */
  acceptedIds: string[];
  attempts: number;
  /** What it ended with: a 2xx, a final refusal (another 4xx), or nothing before its deadline. */
  outcome: 'acknowledged' | 'refused' | 'unanswered';
  /** The final refusal's code. */
  refusal?: string;
}

export interface CheckedAccount {
  id: string;
  apiBalance: number;
  entries: LedgerEntry[];
}

export interface CheckedTask {
  id: string;
  accountId: string;
  status: string;
  /** Hosts of its events (one message per host and task). */
  eventHosts: string[];
  firstClaim: string | null;
  /** Distinct webhook-ids received for it. */
  webhooks: number;
  wantsWebhook: boolean;
}

export interface Verdict {
  acknowledged: number;
  lost: number;
  double_charged: number;
  multiple_events: number;
  ledger_mismatches: number;
  stuck_after_heal: number;
  recovery_seconds_max: number;
  refused: number;
  cancels_acknowledged: number;
  webhooks_missing: number;
  /** Tasks failed (refunded) that no client tried to cancel: work a customer paid for and did not get, told; not a fault count. */
  failed_uncancelled: number;
  problems: string[];
  /** What is told but is no fault (each task failed uncancelled). */
  notes: string[];
}

export function check(
  ops: readonly ClientOp[],
  accounts: readonly CheckedAccount[],
  tasks: readonly CheckedTask[],
  recoverySeconds: readonly number[],
): Verdict {
  const problems: string[] = [];
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const debits = new Map<string, number>();
  const refunds = new Map<string, number>();
  let ledgerMismatches = 0;
  for (const a of accounts) {
    let sum = 0;
    for (const [i, e] of a.entries.entries()) {
      sum += e.type === 'debit' ? -e.amount : e.amount;
      if (e.balance !== sum) {
        ledgerMismatches += 1;
        problems.push(`${a.id}: entry ${i + 1} says ${e.balance}, the entries sum to ${sum}`);
      }
      if (e.type === 'debit') debits.set(e.taskId, (debits.get(e.taskId) ?? 0) + 1);
      if (e.type === 'refund') refunds.set(e.taskId, (refunds.get(e.taskId) ?? 0) + 1);
    }
    if (a.apiBalance !== sum) {
      ledgerMismatches += 1;
      problems.push(`${a.id}: the API says ${a.apiBalance}, the ledger sums to ${sum}`);
    }
  }
  const submits = ops.filter((o) => o.kind === 'submit');
  const acknowledged = submits.filter((o) => o.outcome === 'acknowledged');
  const named = new Set(acknowledged.flatMap((o) => o.acceptedIds));
  let lost = 0;
  let doubleCharged = 0;
  for (const o of acknowledged) {
    // Says which way a charge no 2xx named (below) came about: an answer without the task's id.
    if (o.acceptedIds.length === 0)
      problems.push(`key ${o.key}: answered 2xx without a task id after ${o.attempts} attempts`);
    const ids = new Set(o.acceptedIds);
    if (ids.size > 1) {
      doubleCharged += ids.size - 1;
      problems.push(`key ${o.key}: its 2xx answers named ${ids.size} tasks (${[...ids].join(', ')})`);
    }
    for (const id of ids) {
      if (!byId.has(id) || (debits.get(id) ?? 0) === 0) {
        lost += 1;
        problems.push(
          `key ${o.key}: task ${id} was acknowledged but ${byId.has(id) ? 'has no debit' : 'does not exist'}`,
        );
      }
    }
  }
  for (const [id, n] of debits) {
    if (n > 1) {
      doubleCharged += n - 1;
      problems.push(`${id}: debited ${n} times`);
    }
    // A charge no client was told of: its client gave up or was refused, and paid anyway.
    if (!named.has(id)) {
      doubleCharged += 1;
      problems.push(`${id}: charged, but no client's 2xx named it`);
    }
  }
  let multipleEvents = 0;
  let stuck = 0;
  let webhooksMissing = 0;
  let failedUncancelled = 0;
  const notes: string[] = [];
  const cancelSent = new Set(ops.flatMap((o) => (o.kind === 'cancel' && o.taskId !== undefined ? [o.taskId] : [])));
  for (const t of tasks) {
    if (t.status === 'failed' && !cancelSent.has(t.id)) {
      failedUncancelled += 1;
      notes.push(`${t.id}: failed (refunded), no cancel sent`);
    }
    const settled = t.status === 'completed' || t.status === 'failed';
    const r = refunds.get(t.id) ?? 0;
    if ((t.status === 'failed' && r !== 1) || (t.status === 'completed' && r !== 0) || r > 1) {
      ledgerMismatches += 1;
      problems.push(`${t.id}: ${t.status} with ${r} refunds`);
    }
    if (!settled) {
      stuck += 1;
      problems.push(`${t.id}: still ${t.status}`);
    }
    if (
      t.eventHosts.length > 1 ||
      (t.eventHosts.length === 1 && t.eventHosts[0] !== t.firstClaim && t.status !== 'failed')
    ) {
      multipleEvents += 1;
      problems.push(`${t.id}: events from ${t.eventHosts.join(', ')}, first claim ${String(t.firstClaim)}`);
    }
    if (settled && t.wantsWebhook && t.webhooks !== 1) {
      webhooksMissing += 1;
      problems.push(`${t.id}: ${t.webhooks} distinct webhooks received`);
    }
  }
  const unanswered = ops.filter((o) => o.outcome === 'unanswered');
  stuck += unanswered.length;
  for (const o of unanswered.slice(0, 10))
    problems.push(`key ${o.key} (${o.kind}): no answer after ${o.attempts} attempts`);
  return {
    acknowledged: acknowledged.length,
    lost,
    double_charged: doubleCharged,
    multiple_events: multipleEvents,
    ledger_mismatches: ledgerMismatches,
    stuck_after_heal: stuck,
    recovery_seconds_max: recoverySeconds.length === 0 ? 0 : Math.max(...recoverySeconds),
    refused: submits.filter((o) => o.outcome === 'refused').length,
    cancels_acknowledged: ops.filter((o) => o.kind === 'cancel' && o.outcome === 'acknowledged').length,
    webhooks_missing: webhooksMissing,
    failed_uncancelled: failedUncancelled,
    problems,
    notes,
  };
}
