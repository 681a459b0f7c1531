/**
 * A JetStream publish acknowledgement that confirms the message is stored. One that does not: a
 * clustered stream's leader that sees a message id whose first copy it has staged but not applied
 * answers `{ duplicate: true, seq: 0 }` (nats-server 2.10; later versions answer only once the
 * sequence is known). That copy may still fail: its leader dies before a quorum stored it, or it
 * is refused when applied (an expected sequence no longer true), and then its id stays staged for
 * the duplicate window. So such an answer means "not known yet", never "already stored": read as
 * success it let a submission run without its debit ever landing (scripts/nats-cluster.ts).
 */
import type { PubAck } from '@nats-io/jetstream';

/** The publish's outcome is not known yet: send it again (same message id) a moment later. */
export class UnconfirmedPublishError extends Error {
  constructor(subject: string) {
    super(
      `NATS has not yet stored the first copy of this message on ${subject} (a duplicate answered with sequence 0); its outcome is unknown`,
    );
    this.name = 'UnconfirmedPublishError';
  }
}

/** `ack` when it names where the message is stored; UnconfirmedPublishError otherwise. */
export function confirmedAck(ack: PubAck, subject: string): PubAck {
  if (ack.duplicate && ack.seq === 0) throw new UnconfirmedPublishError(subject);
  return ack;
}
