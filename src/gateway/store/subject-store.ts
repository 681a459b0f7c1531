/**
 * The two operations everything else is built on: read the last message of a subject (with its
 * stream sequence), and publish on a subject only if its last sequence is still the one read.
 */
import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
} from '@nats-io/jetstream';
import type { z } from 'zod';
import { UnconfirmedPublishError, confirmedAck } from '../../protocol/index.js';
import { sleep } from '../../sleep.js';
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

export async function readLast<S extends z.ZodType>(
  jsm: JetStreamManager,
  stream: string,
  subject: string,
  schema: S,
): Promise<Versioned<z.output<S>> | null> {
  const msg = await jsm.streams.getMessage(stream, { last_by_subj: subject }).catch((err: unknown) => {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.NoMessageFound) return null;
    throw err;
  });
  if (msg === null) return null;
  return { seq: msg.seq, value: schema.parse(msg.json()) };
}

/**
 * Refusals that mean "another write to this subject is ahead of yours": 10071, the subject's last
 * sequence is another; 10164, the same without the sequence, from a clustered leader (nats-server
 * 2.11 on) while another write to the subject is still being replicated. Either way: read again.
 */
const WRONG_LAST_SEQUENCE_CODES: ReadonlySet<number> = new Set([
  JetStreamApiCodes.StreamWrongLastSequence,
  JetStreamApiCodes.StreamWrongLastSequenceUnknown,
]);
/**
 * "duplicate message id is in process" (nats-server 2.11 on): this write's own first copy is still
 * being replicated. What 2.10 answers as `{ duplicate: true, seq: 0 }` (confirmed-ack.ts): not known yet.
 */
const DUPLICATE_IN_PROCESS = 10158;

/** Publishes of a write with a message id: enough to outlast a stream leader's election (each waits the publish timeout). */
const IDEMPOTENT_ATTEMPTS = 4;
/** Waits for the first copy of a write still being replicated (confirmed-ack.ts): about an election. */
const UNCONFIRMED_WAITS_MS = [100, 250, 500, 1000, 2000, 2000, 2000, 2000];

/**
 * Publishes `value` if the subject's last sequence is `expectSeq` (0: the subject is empty). With
 * `msgId` the publish is idempotent, so when NATS does not answer (a stream leader died, its
 * successor not yet elected) it is sent again: a write that landed and only lost its answer comes
 * back as a duplicate (or a conflict, then read again) instead of an unknown outcome. A duplicate
 * whose first copy is still being replicated is waited for, never taken as stored.
 *
 * The message id sent is `<msgId>:<expectSeq>`: it names this entry at this place. A clustered
 * leader keeps the id of a write it refused at apply time (two writers expected the same
 * sequence; nats-server 2.10) as "in flight" for the whole duplicate window, so the writer that
 * lost, reading again and retrying under the same id, would be told "duplicate" for ever although
 * nothing was stored. After a conflict the expected sequence, and so the id, is a new one.
 */
export async function writeIf(
  js: JetStreamClient,
  subject: string,
  value: unknown,
  expectSeq: number,
  msgId?: string,
): Promise<PubAck> {
  const id = msgId === undefined ? undefined : `${msgId}:${expectSeq}`;
  let unavailable = 0;
  let unconfirmed = 0;
  for (;;) {
    try {
      const ack = await js.publish(subject, JSON.stringify(value), {
        expect: { lastSubjectSequence: expectSeq },
        ...(id === undefined ? {} : { msgID: id }),
      });
      return confirmedAck(ack, subject);
    } catch (thrown) {
      const err =
        thrown instanceof JetStreamApiError && thrown.code === DUPLICATE_IN_PROCESS
          ? new UnconfirmedPublishError(subject)
          : thrown;
      if (err instanceof JetStreamApiError && WRONG_LAST_SEQUENCE_CODES.has(err.code)) throw new WriteConflict(subject);
      if (err instanceof UnconfirmedPublishError) {
        const wait = UNCONFIRMED_WAITS_MS[unconfirmed++];
        if (wait === undefined) throw err;
        await sleep(wait);
        continue;
      }
      if (id === undefined || ++unavailable >= IDEMPOTENT_ATTEMPTS || !isNatsUnavailable(err)) throw err;
    }
  }
}
