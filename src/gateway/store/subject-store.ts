/**
 * The two operations everything else is built on: read the last message of a subject (with its
 * stream sequence), and publish on a subject only if its last sequence is still the one read.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager, type PubAck } from '@nats-io/jetstream';
import type { z } from 'zod';
import { isNatsUnavailable } from '../nats-unavailable.js';

export interface Versioned<T> {
  seq: number;
  value: T;
}

/** Someone else wrote the subject since it was read: read again and retry. */
export class WriteConflict extends Error {
  constructor(subject: string) {
    super(`Subject ${subject} changed since it was read`);
    this.name = 'WriteConflict';
  }
}

export async function readLast<S extends z.ZodType>(jsm: JetStreamManager, stream: string, subject: string, schema: S): Promise<Versioned<z.output<S>> | null> {
  const msg = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch((err: unknown) => {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return null;
    throw err;
  });
  if (msg === null) return null;
  return { seq: msg.seq, value: schema.parse(msg.json()) };
}

/** Publishes `value` if the subject's last sequence is `expectSeq` (0: the subject is empty). */
/** Publishes of a write with a message id: enough to outlast a stream leader's election (each waits the publish timeout). */
const IDEMPOTENT_ATTEMPTS = 4;

/**
 * Publishes `value` if the subject's last sequence is `expectSeq` (0: the subject is empty). With
 * `msgId` the publish is idempotent, so when NATS does not answer (a stream leader died, its
 * successor not yet elected) it is sent again: a write that landed and only lost its answer comes
 * back as a duplicate (or a conflict, then read again) instead of an unknown outcome.
 */
export async function writeIf(js: JetStreamClient, subject: string, value: unknown, expectSeq: number, msgId?: string): Promise<PubAck> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await js.publish(subject, JSON.stringify(value), {
        expect: { lastSubjectSequence: expectSeq },
        ...(msgId === undefined ? {} : { msgID: msgId }),
      });
    } catch (err) {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamWrongLastSequence) throw new WriteConflict(subject);
      if (msgId === undefined || attempt >= IDEMPOTENT_ATTEMPTS || !isNatsUnavailable(err)) throw err;
    }
  }
}
