/**
 * Claims (docs/protocol.md, "Who settles a task"): before a host runs a task it publishes
 * `media.claims.<host>.<task>`, and only its own user may publish under its host name, so the
 * server vouches for who claimed. The first stored claim of a task names the one host whose
 * terminal event settles it; a host that claimed later, or never, cannot complete, fail or refund
 * it. Shared by the worker (claim before running) and a control plane (believe an event or not).
 */
import { JetStreamApiError, type JetStreamClient, type JetStreamManager, type MsgRequest } from '@nats-io/jetstream';
import { z } from 'zod';
import { CLAIMS_SUBJECT_PREFIX, anyHostClaimSubject, claimSubject, hostAndTask } from './subjects.js';
import { protocolHeaders } from './version.js';

/** Body of `media.claims.<host>.<task>` (what a control plane may log; the subject is what counts). */
export const claimMessageSchema = z.object({
  /** The task id (the subject's last token). */
  id: z.string(),
  /** The claiming host's WORKER_HOST_ID (the subject's host token). */
  host: z.string(),
  /** When the host claimed it. */
  at: z.string(),
});

export type ClaimMessage = z.infer<typeof claimMessageSchema>;

/** "maximum messages per subject exceeded": this host had claimed the task already. */
const ALREADY_CLAIMED = 10077;

/** The host whose claim of the task was stored first, or null when nobody claimed it. */
export async function firstClaimHost(jsm: JetStreamManager, claimsStream: string, taskId: string): Promise<string | null> {
  // The stream leader's get (not a direct get, which a lagging replica may answer without the claim).
  // The server takes next_by_subj here since 2.9; the client's type lacks it.
  const request = { seq: 1, next_by_subj: anyHostClaimSubject(taskId) } as unknown as MsgRequest;
  const first = await jsm.streams.getMessage(claimsStream, request);
  if (first === null) return null;
  return hostAndTask(CLAIMS_SUBJECT_PREFIX, first.subject)?.host ?? null;
}

/**
 * Records `host`'s claim of the task (again: a no-op) and returns the host that claimed it first:
 * `host` itself, or another one, whose task it then is.
 */
export async function claimTask(js: JetStreamClient, jsm: JetStreamManager, o: { claimsStream: string; host: string; timeoutMs: number }, taskId: string): Promise<string> {
  try {
    const claim: ClaimMessage = { id: taskId, host: o.host, at: new Date().toISOString() };
    await js.publish(claimSubject(o.host, taskId), JSON.stringify(claim), {
      msgID: `${taskId}:claim:${o.host}`,
      headers: protocolHeaders(),
      timeout: o.timeoutMs,
    });
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === ALREADY_CLAIMED)) throw err;
  }
  const first = await firstClaimHost(jsm, o.claimsStream, taskId);
  if (first === null) throw new Error(`The claim of task ${taskId} by ${o.host} was acknowledged but cannot be read back`);
  return first;
}
