/**
 * Whether the gateway believes a terminal event (docs/protocol.md, "Who settles a task"): it must
 * come from the host whose claim of the task holds and that marked its settlement while it held it
 * (or, for a claim written before leases, the first claimer). A worker host publishes only under
 * its own name (`media.events.<host>.<task>`, enforced by its NATS user), so the subject says who
 * sent it; the claims stream, replayed by the server's order and clock, says who settles. Anything
 * else (another host's event, a host whose lease lapsed and was taken over, an event nobody claimed
 * for, a subject without a host, a body about another task) is refused here and counted by the
 * caller as a security event: it is what a compromised or cut-off worker host would send.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import {
  EVENTS_SUBJECT_PREFIX,
  hostAndTask,
  settlingHost,
  taskLease,
  type TaskLease,
  type TerminalEvent,
} from '../../protocol/index.js';

export type EventOrigin = { believed: true; host: string } | { believed: false; reason: string };

/** Pure: the host named by the subject, when the subject and the body are about the same task. */
export function subjectHost(subject: string, event: Pick<TerminalEvent, 'id'>): { host: string } | { reason: string } {
  const named = hostAndTask(EVENTS_SUBJECT_PREFIX, subject);
  if (named === undefined)
    return { reason: `subject ${JSON.stringify(subject)} is not ${EVENTS_SUBJECT_PREFIX}.<host>.<task id>` };
  if (named.taskId !== event.id)
    return { reason: `the event is about task ${JSON.stringify(event.id)} but was published for ${named.taskId}` };
  return { host: named.host };
}

/** Pure: why `host`'s event is not believed under `lease`, or null when it is. */
export function refusal(host: string, lease: TaskLease): string | null {
  const settler = settlingHost(lease);
  if (settler === host) return null;
  if (lease.holder === null) return `host ${host} sent it but no host claimed the task`;
  if (settler !== null)
    return `host ${host} sent it but host ${settler} settles the task (claim generation ${lease.generation})`;
  if (lease.holder === host) return `host ${host} sent it without marking its settlement while its claim held`;
  return `host ${host} sent it but host ${lease.holder} holds the task (claim generation ${lease.generation})`;
}

export async function eventOrigin(
  jsm: JetStreamManager,
  claimsStream: string,
  subject: string,
  event: Pick<TerminalEvent, 'id'>,
): Promise<EventOrigin> {
  const named = subjectHost(subject, event);
  if ('reason' in named) return { believed: false, reason: named.reason };
  const reason = refusal(named.host, await taskLease(jsm, claimsStream, event.id));
  return reason === null ? { believed: true, host: named.host } : { believed: false, reason };
}
