/**
 * Whether the gateway believes a terminal event (docs/protocol.md, "Who settles a task"): it must
 * come from the host that claimed the task first. A worker host publishes only under its own
 * name (`media.events.<host>.<task>`, enforced by its NATS user), so the subject says who sent it;
 * the claims stream says who took the task first. Anything else (another host's event, an event
 * nobody claimed for, a subject without a host, a body about another task) is refused here and
 * counted by the caller as a security event: it is what a compromised worker host would send.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import { EVENTS_SUBJECT_PREFIX, firstClaimHost, hostAndTask, type TerminalEvent } from '../protocol/index.js';

export type EventOrigin = { believed: true; host: string } | { believed: false; reason: string };

/** Pure: the host named by the subject, when the subject and the body are about the same task. */
export function subjectHost(subject: string, event: Pick<TerminalEvent, 'id'>): { host: string } | { reason: string } {
  const named = hostAndTask(EVENTS_SUBJECT_PREFIX, subject);
  if (named === undefined) return { reason: `subject ${JSON.stringify(subject)} is not ${EVENTS_SUBJECT_PREFIX}.<host>.<task id>` };
  if (named.taskId !== event.id) return { reason: `the event is about task ${JSON.stringify(event.id)} but was published for ${named.taskId}` };
  return { host: named.host };
}

export async function eventOrigin(jsm: JetStreamManager, claimsStream: string, subject: string, event: Pick<TerminalEvent, 'id'>): Promise<EventOrigin> {
  const named = subjectHost(subject, event);
  if ('reason' in named) return { believed: false, reason: named.reason };
  const first = await firstClaimHost(jsm, claimsStream, event.id);
  if (first === null) return { believed: false, reason: `host ${named.host} sent it but no host claimed the task` };
  if (first !== named.host) return { believed: false, reason: `host ${named.host} sent it but host ${first} claimed the task first` };
  return { believed: true, host: named.host };
}
