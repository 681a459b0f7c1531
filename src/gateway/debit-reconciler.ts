/**
 * Every debit gets its task. A submission writes its task record before it answers, and the
 * outbox consumer (consumers.ts) makes the task and job of every debit after it. nats-server 2.10
 * can skip a replicated consumer's redelivery after a leader change (nats-io/nats-server#6566,
 * docs/operations.md "Network partitions"): a debit so skipped, whose request also failed to write
 * its record, would stay charged with no task, and nothing else would refund it (the pending sweep
 * reads task records). So each gateway also reads the ledger forward from where it stood when the
 * gateway started, and makes the task of a debit that has none once the debit is older than the
 * outbox needs, as the outbox would (`materialise`: the task created once, the job published under
 * its message id). Reading from the start rather than from the first entry keeps a restart from
 * re-reading a ledger's whole history; debits made while no gateway ran are the outbox's, which
 * then delivers them.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { serialInterval } from './serial-interval.js';
import type { GatewayService } from './service.js';
import { ledgerEntrySchema } from './store/records.js';
import type { StoreNames } from './store/streams.js';
import type { Tasks } from './store/tasks.js';

/** A debit younger than this is left to its request and the outbox. */
export const DEBIT_GRACE_MS = 30_000;
/** How often the ledger is read forward. */
export const DEBIT_RECONCILE_INTERVAL_MS = 10_000;

export interface DebitReconcileDeps {
  jsm: JetStreamManager;
  names: StoreNames;
  tasks: Pick<Tasks, 'get'>;
  service: Pick<GatewayService, 'materialise'>;
  logger: Pick<Logger, 'info' | 'warn'>;
}

/** One pass from ledger sequence `fromSeq` over debits older than `graceMs`; returns where the next pass starts and how many tasks it made. */
export async function reconcileDebitsOnce(deps: DebitReconcileDeps, fromSeq: number, nowMs: number, graceMs = DEBIT_GRACE_MS): Promise<{ nextSeq: number; made: number }> {
  let seq = fromSeq;
  let made = 0;
  for (;;) {
    const msg = await deps.jsm.direct.getMessage(deps.names.ledgerStream, { seq, next_by_subj: deps.names.ledgerFilter });
    if (msg === null || msg.time.getTime() > nowMs - graceMs) break;
    const entry = ledgerEntrySchema.safeParse(msg.json());
    if (entry.success && entry.data.type === 'debit') {
      const accountId = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
      if ((await deps.tasks.get(accountId, entry.data.taskId)) === null) {
        await deps.service.materialise(accountId, entry.data, msg.seq);
        deps.logger.warn({ taskId: entry.data.taskId, accountId, ledgerSeq: msg.seq }, 'A debit had no task after the outbox\'s time; its task was made and its job published');
        made += 1;
      }
    }
    seq = msg.seq + 1;
  }
  return { nextSeq: seq, made };
}

export function startDebitReconciler(deps: DebitReconcileDeps, o: { intervalMs?: number; graceMs?: number } = {}): { stop(): Promise<void> } {
  let from: number | undefined;
  const pass = async () => {
    try {
      from ??= (await deps.jsm.streams.info(deps.names.ledgerStream)).state.last_seq + 1;
      from = (await reconcileDebitsOnce(deps, from, Date.now(), o.graceMs)).nextSeq;
    } catch (err) {
      deps.logger.warn({ err }, 'Reading the ledger for debits without a task failed; retried at the next interval');
    }
  };
  // The first pass at once: it fixes where reading starts, the ledger's end when the gateway started.
  return serialInterval(pass, o.intervalMs ?? DEBIT_RECONCILE_INTERVAL_MS, { now: true });
}
