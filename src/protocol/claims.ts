/**
 * Claims are leases (docs/protocol.md, "Who settles a task"). A host publishes
 * `media.claims.<host>.<task>` to take a task, again with each heartbeat of the job to renew it, and
 * once more to mark that it settles it; only its own user may publish under its host name, so the
 * server vouches for who wrote each entry, and the server's sequence and timestamps (never a host's
 * clock) say in which order and when. Every reader replays the task's entries by the same rule
 * (`leaseOf`), so the worker about to run or settle and the control plane believing an event agree:
 * - the first claim holds the task for `leaseMs` from when it was stored; the holder's entries renew it;
 * - another host's claim takes the task over (a new generation) only when stored after the
 *   holder's lease lapsed; stored while it held, it is refused, whatever that host says;
 * - the holder's settle mark, stored while it holds, makes the task its own for good: only its
 *   event is believed, and no claim can take the task over afterwards.
 * A claim written before leases (no `leaseMs`, protocol 2.0) never lapses: the old rule, "the
 * first claim settles". Shared by the worker (claim, renew, settle) and a control plane.
 */
import type { JetStreamClient, JetStreamManager, MsgRequest } from '@nats-io/jetstream';
import { z } from 'zod';
import { CLAIMS_SUBJECT_PREFIX, anyHostClaimSubject, claimSubject, hostAndTask } from './subjects.js';
import { protocolHeaders } from './version.js';

import { MAX_LEASE_MS, MIN_LEASE_MS } from './settings.js';

export { MAX_LEASE_MS, MIN_LEASE_MS };

/** `claim` takes the task (or takes it over), `renew` keeps it, `settle` marks the holder's event as the one that settles it. */
export const CLAIM_OPS = ['claim', 'renew', 'settle'] as const;
export type ClaimOp = (typeof CLAIM_OPS)[number];

/** Body of `media.claims.<host>.<task>` (the subject says who; the server's stored time says when). */
export const claimMessageSchema = z.object({
  /** The task id (the subject's last token). */
  id: z.string(),
  /** The claiming host's WORKER_HOST_ID (the subject's host token). */
  host: z.string(),
  /** When the host wrote it, by its clock (for logs only: leases count from the server's time). */
  at: z.string(),
  /** What the entry does (protocol 2.1); absent: `claim`. */
  op: z.enum(CLAIM_OPS).optional(),
  /** How long the entry holds the task from when the server stored it (protocol 2.1); absent: for good (a 2.0 claim). */
  leaseMs: z.number().int().min(MIN_LEASE_MS).max(MAX_LEASE_MS).optional(),
});

export type ClaimMessage = z.infer<typeof claimMessageSchema>;

/** One stored entry of a task's claims, as the server stored it. */
export interface ClaimEntry {
  host: string;
  seq: number;
  /** The server's timestamp of the entry, in ms. */
  atMs: number;
  op: ClaimOp;
  /** Null: a claim without a lease (protocol 2.0), which never lapses. */
  leaseMs: number | null;
}

/** Who holds a task, after replaying its entries. */
export interface TaskLease {
  /** The host whose claim holds (its lease may have lapsed with nobody taking over); null: nobody claimed it. */
  holder: string | null;
  /** 1 for the first claimer, one more for each takeover; 0 when nobody claimed it. */
  generation: number;
  /** When the holder's lease lapses (server ms); null: it does not (settled, or a 2.0 claim). */
  expiresAtMs: number | null;
  /** The holder marked its settlement: the task is its own for good. */
  settled: boolean;
  /** Entries of other hosts that were refused because the task was held (or settled). */
  refused: { host: string; seq: number; op: ClaimOp }[];
}

const NOBODY: TaskLease = { holder: null, generation: 0, expiresAtMs: null, settled: false, refused: [] };

/** Pure: the lease after `entries` (in stream order). */
export function leaseOf(entries: readonly ClaimEntry[]): TaskLease {
  let lease: TaskLease = { ...NOBODY, refused: [] };
  for (const e of entries) {
    const expiresAtMs = e.leaseMs === null ? null : e.atMs + e.leaseMs;
    if (lease.holder === null) {
      lease = { ...lease, holder: e.host, generation: 1, expiresAtMs, settled: e.op === 'settle' };
    } else if (e.host === lease.holder) {
      // The holder renews (a lapsed lease nobody took over comes back to it); settled stays settled.
      if (!lease.settled) lease = { ...lease, expiresAtMs, settled: e.op === 'settle' };
    } else if (!lease.settled && e.op === 'claim' && lease.expiresAtMs !== null && e.atMs > lease.expiresAtMs) {
      lease = { ...lease, holder: e.host, generation: lease.generation + 1, expiresAtMs };
    } else {
      // A live lease, a settled task, or a host renewing or settling what it no longer holds.
      lease.refused.push({ host: e.host, seq: e.seq, op: e.op });
    }
  }
  if (lease.settled) lease.expiresAtMs = null;
  return lease;
}

/**
 * Pure: the host whose terminal event settles the task, or null while none does: the holder once it
 * marked its settlement, or the holder of a claim without a lease (2.0). A holder of a lease that
 * has not marked its settlement settles nothing yet: its event could still be overtaken by a takeover.
 */
export function settlingHost(lease: TaskLease): string | null {
  if (lease.holder === null) return null;
  return lease.settled || lease.expiresAtMs === null ? lease.holder : null;
}

/**
 * Every readable entry of the task's claims, in stream order, from the stream leader; `known`:
 * entries read before (they never change), so only what was stored after the last of them is read.
 * Each get starts after the previous entry, so a whole read is one pass over the stream (nats-server
 * 2.9 scans), and a read after `known` only over what was stored since.
 */
export async function readClaims(
  jsm: JetStreamManager,
  claimsStream: string,
  taskId: string,
  known: readonly ClaimEntry[] = [],
): Promise<ClaimEntry[]> {
  const entries: ClaimEntry[] = [...known];
  for (let seq = (known.at(-1)?.seq ?? 0) + 1; ;) {
    // The stream leader's get (not a direct get, which a lagging replica may answer without the
    // latest entry). The server takes next_by_subj here since 2.9; the client's type lacks it.
    const request = { seq, next_by_subj: anyHostClaimSubject(taskId) } as unknown as MsgRequest;
    const stored = await jsm.streams.getMessage(claimsStream, request);
    if (stored === null) return entries;
    const host = hostAndTask(CLAIMS_SUBJECT_PREFIX, stored.subject)?.host;
    const body = claimMessageSchema.safeParse(safeJson(stored.data));
    // An unreadable body (a compromised host's, say) takes nothing: the subject alone is no claim.
    if (host !== undefined && body.success) {
      entries.push({
        host,
        seq: stored.seq,
        atMs: stored.time.getTime(),
        op: body.data.op ?? 'claim',
        leaseMs: body.data.leaseMs ?? null,
      });
    }
    seq = stored.seq + 1;
  }
}

/** The task's lease as the server's entries say now. */
export async function taskLease(jsm: JetStreamManager, claimsStream: string, taskId: string): Promise<TaskLease> {
  return leaseOf(await readClaims(jsm, claimsStream, taskId));
}

/** The host whose claim holds the task now (its lease may have lapsed with nobody taking over), or null. */
export async function claimHolder(jsm: JetStreamManager, claimsStream: string, taskId: string): Promise<string | null> {
  return (await taskLease(jsm, claimsStream, taskId)).holder;
}

export interface ClaimOptions {
  claimsStream: string;
  host: string;
  timeoutMs: number;
  /** WORKER_CLAIM_LEASE_MS. */
  leaseMs: number;
}

/** Stores one entry of this host for the task (no read back); resolves to its stream sequence. */
export async function publishClaim(js: JetStreamClient, o: ClaimOptions, taskId: string, op: ClaimOp): Promise<number> {
  const body: ClaimMessage = { id: taskId, host: o.host, at: new Date().toISOString(), op, leaseMs: o.leaseMs };
  // No Nats-Msg-Id: every renewal is a new entry, and a retried publish stored twice only renews twice.
  const ack = await js.publish(claimSubject(o.host, taskId), JSON.stringify(body), {
    headers: protocolHeaders(),
    timeout: o.timeoutMs,
  });
  return ack.seq;
}

/** A task's lease after this host's entry, and when the server stored that entry. */
export interface ClaimResult extends TaskLease {
  /** The server's timestamp of this host's entry, in ms (the "now" a lease is compared with). */
  atMs: number;
}

/**
 * Stores this host's entry (`op`) and returns the task's lease as it stands after it: this host
 * holds the task when `holder` is `o.host` (and `settled` says whether its settle mark counted).
 * `known`: entries of the task read before (see readClaims); the result's `entries` extend them.
 */
export async function claimTask(
  js: JetStreamClient,
  jsm: JetStreamManager,
  o: ClaimOptions,
  taskId: string,
  op: ClaimOp = 'claim',
  known: readonly ClaimEntry[] = [],
): Promise<ClaimResult & { entries: ClaimEntry[] }> {
  const seq = await publishClaim(js, o, taskId, op);
  // A stream made anew (sequences start again) makes what was read before meaningless.
  const entries = await readClaims(jsm, o.claimsStream, taskId, (known.at(-1)?.seq ?? 0) < seq ? known : []);
  const own = entries.find((e) => e.seq === seq);
  if (own === undefined)
    throw new Error(`The claim of task ${taskId} by ${o.host} was acknowledged but cannot be read back`);
  return { ...leaseOf(entries), atMs: own.atMs, entries };
}

/** How many tasks' entries a claimer keeps (the tasks this host runs or hands back now, with room to spare). */
const KNOWN_TASKS = 1_000;

/**
 * This host's claims, remembering each task's entries, so that a renewal or a settle mark reads
 * only what was stored since the last read (cheap on nats-server 2.9, which scans).
 */
export function createClaimer(
  js: JetStreamClient,
  jsm: JetStreamManager,
  o: ClaimOptions,
): (taskId: string, op?: ClaimOp) => Promise<ClaimResult> {
  const known = new Map<string, ClaimEntry[]>();
  return async (taskId, op = 'claim') => {
    const { entries, ...result } = await claimTask(js, jsm, o, taskId, op, known.get(taskId));
    known.delete(taskId);
    known.set(taskId, entries);
    if (known.size > KNOWN_TASKS) known.delete(known.keys().next().value as string);
    return result;
  };
}

function safeJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data)) as unknown;
  } catch {
    return undefined;
  }
}
