/**
 * A failed first connection to NATS, said in the operator's terms: which server, which credential
 * setting the server refused, or which TLS setting did not fit, instead of the client's bare
 * "Authorization Violation" or "self-signed certificate in certificate chain".
 */
import { redactCredentials } from '../settings-table.js';
import type { NatsCredentialSettings } from './nats-credentials.js';

export class NatsConnectError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'NatsConnectError';
  }
}

/** Node's codes for a server certificate the client could not verify. */
const TLS_VERIFY_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Which credential was offered, in the variables' names (never the secret itself). */
export function describeCredentials(s: NatsCredentialSettings): string {
  if (s.natsCredsFile !== undefined) return `the credentials file NATS_CREDS_FILE=${s.natsCredsFile}`;
  if (s.natsNkeySeedFile !== undefined) return `the nkey seed NATS_NKEY_SEED_FILE=${s.natsNkeySeedFile}`;
  if (s.natsToken !== undefined) return 'the token NATS_TOKEN';
  if (s.natsUser !== undefined) return `user "${s.natsUser}" with NATS_PASSWORD`;
  return 'no credentials (set NATS_USER and NATS_PASSWORD, NATS_CREDS_FILE, NATS_NKEY_SEED_FILE or NATS_TOKEN)';
}

/**
 * The error to report for a failed first connection to `urls` (NATS_URL); unknown failures keep
 * their message. A password or token written into NATS_URL is not repeated (`nats://u:***@host`).
 */
export function explainConnectError(err: unknown, urls: string, s: NatsCredentialSettings): Error {
  const servers = redactCredentials(urls);
  const causes = causeChain(err);
  const auth = causes.find(
    (e) => e.name === 'AuthorizationError' || /authorization violation|authentication/i.test(e.message),
  );
  if (auth !== undefined) {
    return new NatsConnectError(`NATS at ${servers} refused ${describeCredentials(s)}: ${auth.message}`, {
      cause: err,
    });
  }
  const tls = causes.find(
    (e) => TLS_VERIFY_CODES.has(String((e as { code?: unknown }).code)) || /certificate|tls|ssl/i.test(e.message),
  );
  if (tls !== undefined) {
    const ca =
      s.natsTlsCaFile === undefined ? 'NATS_TLS_CA_FILE unset (the system CAs)' : `NATS_TLS_CA_FILE=${s.natsTlsCaFile}`;
    return new NatsConnectError(`TLS with NATS at ${servers} failed (${ca}): ${tls.message}`, { cause: err });
  }
  const first = causes[0];
  return new NatsConnectError(`Could not connect to NATS at ${servers} (NATS_URL): ${first?.message ?? String(err)}`, {
    cause: err,
  });
}

function causeChain(err: unknown): Error[] {
  const out: Error[] = [];
  for (let e: unknown = err; e instanceof Error && out.length < 5; e = e.cause) out.push(e);
  return out;
}
