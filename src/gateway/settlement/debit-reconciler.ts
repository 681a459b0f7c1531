/**
 * Every debit gets its task and its job. A submission writes its task record before it answers,
 * and the outbox consumer (consumers.ts) makes the task and job of every debit after it. When
 * nats-server 2.10 skips the outbox's redelivery (forward-reader.ts), a debit whose request also
 * failed would stay charged with no task (the pending sweep reads task records only), or with a
 * pending task whose job was never stored. So each gateway also reads the ledger forward and, for a
 * debit older than the outbox needs:
 *
 * - with no task: makes it as the outbox would (`materialise`: the task created once, the job
 *   published under its message id);
 * - with a pending task: publishes the job again under the same message id. The jobs stream keeps
 *   the first copy of an id for its duplicate window, and every earlier publish of this job came
 *   after the debit, so while the debit is younger than the window (less a margin for the clocks)
 *   the server drops a second copy: it is stored only when none was. Past it, nothing is
 *   published (a second copy of a queued job would be run twice or exhaust its deliveries).
 */
import type { JetStreamManager, StoredMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { startForwardReader, readForwardOnce, type ForwardRead } from './forward-reader.js';
import type { GatewayService } from '../service.js';
import { ledgerEntrySchema } from '../store/records.js';
import type { StoreNames } from '../store/streams.js';
import type { Tasks } from '../store/tasks.js';

/** A debit younger than this is left to its request and the outbox. */
export const DEBIT_GRACE_MS = 30_000;
/** How often the ledger is read forward. */
export const DEBIT_RECONCILE_INTERVAL_MS = 10_000;
/** How much younger than the jobs stream's duplicate window a debit must be for its job to be published again. */
export const REPUBLISH_MARGIN_MS = 30_000;

export interface DebitReconcileDeps {
  jsm: JetStreamManager;
  names: StoreNames;
  tasks: Pick<Tasks, 'get'>;
  service: Pick<GatewayService, 'materialise' | 'publishJob'>;
  /** The jobs stream's duplicate window (its config's `duplicate_window`). */
  jobsDuplicateWindowMs: number;
  logger: Pick<Logger, 'info' | 'warn'>;
}

function debitsOf(deps: DebitReconcileDeps): ForwardRead {
  return {
    next: (seq) => deps.jsm.direct.getMessage(deps.names.ledgerStream, { seq, next_by_subj: deps.names.ledgerFilter }),
    handle: async (msg: StoredMsg, nowMs: number) => {
      const entry = ledgerEntrySchema.safeParse(msg.json());
      if (!entry.success || entry.data.type !== 'debit') return false;
      const accountId = msg.subject.slice(msg.subject.lastIndexOf('.') + 1);
      const at = { taskId: entry.data.taskId, accountId, ledgerSeq: msg.seq };
      const task = await deps.tasks.get(accountId, entry.data.taskId);
      if (task === null) {
        await deps.service.materialise(accountId, entry.data, msg.seq);
        deps.logger.warn(at, "A debit had no task after the outbox's time; its task was made and its job published");
        return true;
      }
      if (
        task.value.status !== 'pending' ||
        nowMs - msg.time.getTime() >= deps.jobsDuplicateWindowMs - REPUBLISH_MARGIN_MS
      )
        return false;
      const { duplicate } = await deps.service.publishJob(entry.data);
      if (duplicate) return false;
      deps.logger.warn(at, "A pending task's job had not been stored after the outbox's time; it was published");
      return true;
    },
  };
}

/** One pass from ledger sequence `fromSeq` over debits older than `graceMs`; where the next pass starts and how many it repaired. */
export async function reconcileDebitsOnce(
  deps: DebitReconcileDeps,
  fromSeq: number,
  nowMs: number,
  graceMs = DEBIT_GRACE_MS,
): Promise<{ nextSeq: number; repaired: number }> {
  return readForwardOnce(debitsOf(deps), fromSeq, nowMs, graceMs);
}

export function startDebitReconciler(
  deps: DebitReconcileDeps,
  o: { intervalMs?: number; graceMs?: number } = {},
): { stop(): Promise<void> } {
  return startForwardReader({
    ...debitsOf(deps),
    lastSeq: async () => (await deps.jsm.streams.info(deps.names.ledgerStream)).state.last_seq,
    graceMs: o.graceMs ?? DEBIT_GRACE_MS,
    intervalMs: o.intervalMs ?? DEBIT_RECONCILE_INTERVAL_MS,
    what: 'the ledger for debits without a task or job',
    logger: deps.logger,
  });
}
