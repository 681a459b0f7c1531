/**
 * Nothing stays pending for ever: a task still pending GATEWAY_PENDING_LIFETIME_MS (per kind) after
 * its creation fails with TASK_EXPIRED and is refunded, through the same settle() as a worker's
 * failure event, so the refund is written once and a worker finishing the job later changes
 * nothing (the task is no longer pending).
 *
 * Finding them cheaply: the tasks stream keeps one message per task, and a task that changes is
 * written anew at the end, so a pending task sits at the sequence of its creation and the stream
 * is in creation order for pending tasks. The sweep reads forward (direct get, tasks only) from
 * the oldest pending task it saw last time and stops at the first message stored after now minus
 * the shortest lifetime: every pending task after it is younger. Every gateway sweeps; two
 * expiring the same task is harmless.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { JobKind } from '../../jobs/index.js';
import type { TerminalEvent } from '../../protocol/index.js';
import { serialInterval } from './serial-interval.js';
import type { GatewayService } from '../service.js';
import { taskRecordSchema, type TaskRecord } from '../store/records.js';
import type { StoreNames } from '../store/streams.js';

export const TASK_EXPIRED = 'TASK_EXPIRED';

export interface PendingSweepDeps {
  jsm: JetStreamManager;
  names: StoreNames;
  service: Pick<GatewayService, 'settle'>;
  lifetimesMs: Record<JobKind, number>;
  logger: Logger;
}

/** One pass from sequence `fromSeq`; returns where the next pass starts and how many tasks expired. */
export async function sweepPendingOnce(
  deps: PendingSweepDeps,
  fromSeq: number,
  nowMs: number,
): Promise<{ nextSeq: number; expired: number }> {
  const cutoff = nowMs - Math.min(...Object.values(deps.lifetimesMs));
  let seq = fromSeq;
  let oldestPending: number | undefined;
  let expired = 0;
  for (;;) {
    const msg = await deps.jsm.direct.getMessage(deps.names.tasksStream, { seq, next_by_subj: deps.names.tasksFilter });
    if (msg === null) break;
    if (msg.time.getTime() > cutoff) {
      oldestPending ??= msg.seq;
      break;
    }
    const parsed = taskRecordSchema.safeParse(msg.json());
    if (parsed.success && parsed.data.status === 'pending') {
      const task = parsed.data;
      if (nowMs - Date.parse(task.createdAt) >= deps.lifetimesMs[task.kind]) {
        const outcome = await deps.service.settle(
          expiryEvent(task, deps.lifetimesMs[task.kind], nowMs),
          deps.logger.child({ taskId: task.id }),
        );
        if (outcome === 'failed') expired += 1;
      } else {
        oldestPending ??= msg.seq;
      }
    }
    seq = msg.seq + 1;
  }
  return { nextSeq: oldestPending ?? seq, expired };
}

export function startPendingSweeper(deps: PendingSweepDeps, intervalMs: number): { stop(): Promise<void> } {
  let from = 1;
  return serialInterval(async () => {
    try {
      const pass = await sweepPendingOnce(deps, from, Date.now());
      from = pass.nextSeq;
      if (pass.expired > 0) deps.logger.info({ expired: pass.expired }, 'Pending tasks expired and refunded');
    } catch (err) {
      deps.logger.warn({ err }, 'Sweeping pending tasks failed; retried at the next interval');
    }
  }, intervalMs);
}

function expiryEvent(task: TaskRecord, lifetimeMs: number, nowMs: number): TerminalEvent {
  const at = new Date(nowMs).toISOString();
  return {
    id: task.id,
    model: task.model,
    status: 'failed',
    result: null,
    creditsUsed: 0,
    createdAt: task.createdAt,
    refund: true,
    creditsRefunded: task.creditsUsed,
    error: {
      code: TASK_EXPIRED,
      status: 504,
      message: `Expected the task to finish within ${lifetimeMs / 1000} s of its submission but it was still pending; the credits were refunded`,
    },
    startedAt: null,
    finishedAt: at,
    durationMs: null,
    attempt: 0,
    worker: 'gateway',
  };
}
