/**
 * The version of the wire protocol (docs/protocol.md, "Versions and compatibility"): `major.minor`.
 * A minor step only adds (optional fields, subjects, codes) and readers ignore what they do not
 * know; anything else is a new major. Every message the worker sends carries it in a header, and a
 * job may carry it too: a job written for another major is refused (INVALID_JOB) rather than
 * misread.
 */
import { headers, type MsgHdrs } from '@nats-io/transport-node';

export const PROTOCOL_VERSION = '2.1';
export const PROTOCOL_HEADER = 'Media-Protocol-Version';

const MAJOR = PROTOCOL_VERSION.split('.')[0];

/** Headers of a message the worker sends: the protocol version, plus any given. */
export function protocolHeaders(extra: Readonly<Record<string, string>> = {}): MsgHdrs {
  const h = headers();
  h.set(PROTOCOL_HEADER, PROTOCOL_VERSION);
  for (const [key, value] of Object.entries(extra)) h.set(key, value);
  return h;
}

/** Null when a message written for `version` (the header's value; absent: this one) can be read here, else why not. */
export function protocolMismatch(version: string | undefined): string | null {
  if (version === undefined || version === '') return null;
  if (/^\d+\.\d+$/.test(version) && version.split('.')[0] === MAJOR) return null;
  return `Expected header ${PROTOCOL_HEADER} to be absent or ${MAJOR}.<minor> (this worker speaks ${PROTOCOL_VERSION}) but received ${JSON.stringify(version.slice(0, 64))}`;
}
