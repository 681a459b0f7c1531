/**
 * What a control plane would do, for the tests: publish jobs, read the terminal events, look at
 * the work queue. Plus `waitFor`, because everything here is asynchronous.
 */
import { JetStreamApiError, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { terminalEventSchema, type TerminalEvent } from '../../../src/protocol/index.js';
import type { WorkerSettings } from '../../../src/worker/settings.js';

export interface ControlPlane {
  nc: NatsConnection;
  jsm: JetStreamManager;
  /** Publishes to media.jobs.<kind>.<model>; `msgId: null` leaves the Nats-Msg-Id header out. */
  publishJob(
    kind: string,
    model: string,
    body: unknown,
    options?: { msgId?: string | null; raw?: Uint8Array },
  ): Promise<{ seq: number; duplicate: boolean }>;
  /** Every event in the events stream, validated against the event schema. */
  events(): Promise<TerminalEvent[]>;
  /** Events of one task (there must never be more than one). */
  eventsOf(taskId: string): Promise<TerminalEvent[]>;
  jobsInQueue(): Promise<number>;
  close(): Promise<void>;
}

/** `auth`: a role's credentials and inbox, on a server that requires them (test/helpers/role-nats.ts). */
export async function controlPlane(
  url: string,
  settings: Pick<WorkerSettings, 'jobsStream' | 'eventsStream'>,
  auth: { user?: string; pass?: string; inboxPrefix?: string } = {},
): Promise<ControlPlane> {
  const nc = await connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 200, ...auth });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const events = async (): Promise<TerminalEvent[]> => {
    const info = await jsm.streams.info(settings.eventsStream);
    const out: TerminalEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const stored = await jsm.streams.getMessage(settings.eventsStream, { seq }).catch(() => null);
      if (stored) out.push(terminalEventSchema.parse(stored.json()));
    }
    return out;
  };
  return {
    nc,
    jsm,
    async publishJob(kind, model, body, options = {}) {
      const msgId = options.msgId === undefined ? bodyId(body) : options.msgId;
      const h = natsHeaders();
      if (msgId !== null && msgId !== undefined) h.set('Nats-Msg-Id', msgId);
      const payload = options.raw ?? new TextEncoder().encode(JSON.stringify(body));
      const ack = await js.publish(`media.jobs.${kind}.${model}`, payload, { headers: h });
      return { seq: ack.seq, duplicate: ack.duplicate };
    },
    events,
    async eventsOf(taskId) {
      return (await events()).filter((e) => e.id === taskId);
    },
    async jobsInQueue() {
      return (await jsm.streams.info(settings.jobsStream)).state.messages;
    },
    async close() {
      await nc.close();
    },
  };
}

/** Deletes the worker's streams, for a clean slate on a shared (NATS_URL) server. */
export async function deleteStreams(jsm: JetStreamManager, names: readonly string[]): Promise<void> {
  for (const name of names) {
    await jsm.streams.delete(name).catch((err: unknown) => {
      if (!(err instanceof JetStreamApiError)) throw err;
    });
  }
}

function bodyId(body: unknown): string | undefined {
  if (typeof body === 'object' && body !== null && 'id' in body && typeof body.id === 'string') return body.id;
  return undefined;
}

export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 20_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `Timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}`,
      );
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
