/**
 * NATS not answering, told apart from a bug: the gateway's state lives in JetStream, so while no
 * server (or no stream leader) answers, every request fails the same way, and the client should
 * come back later (503 + Retry-After) rather than read it as an internal error (500).
 * Errors are recognised by name: the services package nests its own copy of the NATS client, so
 * `instanceof` would miss some of them.
 */

/** Seconds a client is asked to wait: about one reconnect and a stream leader's election. */
export const NATS_RETRY_AFTER_SECONDS = 5;

const UNAVAILABLE_NAMES = new Set([
  'TimeoutError',
  'NoResponders',
  'NoRespondersError',
  'ClosedConnectionError',
  'DrainingConnectionError',
  'ConnectionError',
  'JetStreamNotEnabled',
  // A write whose first copy NATS was still replicating when it stopped waiting (confirmed-ack.ts).
  'UnconfirmedPublishError',
  // The ledger's read replicas stayed behind its leader (store/ledger.ts).
  'LedgerReplicaBehind',
]);

/** JetStream API status 503: "JetStream system temporarily unavailable", no quorum, no leader. */
const API_UNAVAILABLE_STATUS = 503;

/** True when `err` (or an error it wraps) says that NATS did not answer, as opposed to refusing. */
export function isNatsUnavailable(err: unknown): boolean {
  return unavailableCause(err) !== undefined;
}

function unavailableCause(err: unknown): Error | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth += 1) {
    if (UNAVAILABLE_NAMES.has(e.name)) return e;
    if (e.name === 'RequestError' && e.cause instanceof Error && e.cause.name.startsWith('NoResponders'))
      return e.cause;
    if (e.name === 'JetStreamApiError' && (e as { status?: unknown }).status === API_UNAVAILABLE_STATUS) return e;
  }
  return undefined;
}
