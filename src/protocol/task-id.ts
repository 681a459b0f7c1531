/**
 * Which task a job message is about: the `Nats-Msg-Id` header when present, else the body's `id`.
 * Without one there is nobody to bill or refund, so such a message is terminated without an event
 * (docs/protocol.md, "Jobs without a task id").
 */
import { createHash } from 'node:crypto';
import { EVENTS_SUBJECT_PREFIX, isTaskId } from './subjects.js';

export const MSG_ID_HEADER = 'Nats-Msg-Id';

/** The little of a message this needs; both JsMsg and StoredMsg fit. */
export interface HeaderReader {
  get(key: string): string;
  has(key: string): boolean;
}

export type TaskIdReading =
  | { ok: true; id: string; source: 'header' | 'body'; body: unknown }
  /** `claimed`: the header's or body's id when it is a string that is not a task id (it gets an event all the same). */
  | { ok: false; reason: string; body: unknown; claimed?: string };

/** Decodes the body as JSON; `undefined` when it is not JSON (the caller reports that as INVALID_JOB). */
export function decodeBody(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data)) as unknown;
  } catch {
    return undefined;
  }
}

/** A NATS message's body as JSON (its own `json()`); `undefined` when it is not JSON. */
export function messageJson(msg: { json(): unknown }): unknown {
  try {
    return msg.json();
  } catch {
    return undefined;
  }
}

export function readTaskId(headers: HeaderReader | undefined, data: Uint8Array): TaskIdReading {
  const body = decodeBody(data);
  const header = headers?.has(MSG_ID_HEADER) ? headers.get(MSG_ID_HEADER) : '';
  if (header !== '') {
    if (isTaskId(header)) return { ok: true, id: header, source: 'header', body };
    return {
      ok: false,
      reason: `the ${MSG_ID_HEADER} header ${JSON.stringify(header)} is not a task id`,
      body,
      claimed: header,
    };
  }
  const id = bodyField(body, 'id');
  if (id === undefined) return { ok: false, reason: `no ${MSG_ID_HEADER} header and no id in the body`, body };
  if (isTaskId(id)) return { ok: true, id, source: 'body', body };
  return {
    ok: false,
    reason: `the body's id ${JSON.stringify(id)} is not a task id`,
    body,
    ...(typeof id === 'string' && id !== '' ? { claimed: id } : {}),
  };
}

/** An own property of a JSON object body, or undefined. */
export function bodyField(body: unknown, key: string): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  return Object.hasOwn(body, key) ? (body as Record<string, unknown>)[key] : undefined;
}

/** A job body's `credits` when it is a whole non-negative number (echoed as `creditsRefunded`), else undefined. */
export function bodyCredits(body: unknown): number | undefined {
  const credits = bodyField(body, 'credits');
  return typeof credits === 'number' && Number.isSafeInteger(credits) && credits >= 0 ? credits : undefined;
}

/**
 * Where the failure event of a job whose id is not a task id goes: a claimed id may hold dots or
 * wildcards, so the subject carries its SHA-256 instead (`media.events.<host>.invalid.<hex>`, one
 * token more than any task's, still under the host's `media.events.<host>.>`); the event's `id` is
 * the claimed id itself.
 */
export function invalidTaskIdSubject(host: string, claimed: string): string {
  return `${EVENTS_SUBJECT_PREFIX}.${host}.invalid.${createHash('sha256').update(claimed).digest('hex')}`;
}
