/**
 * Standard Webhooks v1 signatures (https://www.standardwebhooks.com): the signed content is
 * `<webhook-id>.<webhook-timestamp>.<body>`, the signature `v1,<base64 HMAC-SHA256>` under the
 * secret's key, the base64 that follows `whsec_`. During a rotation a request carries one
 * signature per live secret, space-separated; a receiver accepts any of them. Pure.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';
/** 24 random bytes (192 bits), within the specification's 24 to 64. */
const SECRET_BYTES = 24;

export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** Whether `text` is a secret in the `whsec_<base64>` form this module makes and reads. */
export function isWebhookSecret(text: string): boolean {
  return (
    text.startsWith(SECRET_PREFIX) &&
    /^[A-Za-z0-9+/]+={0,2}$/.test(text.slice(SECRET_PREFIX.length)) &&
    secretKey(text).length >= 16
  );
}

/** The HMAC key: the bytes the base64 after `whsec_` encodes (not the string itself). */
export function secretKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', secretKey(secret)).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: one signature per secret. */
export function signatureHeader(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets.map((s) => sign(s, id, timestampSeconds, body)).join(' ');
}

/** The three headers of a request (the body is sent exactly as signed). */
export function webhookHeaders(
  secrets: readonly string[],
  id: string,
  timestampSeconds: number,
  body: string,
): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': signatureHeader(secrets, id, timestampSeconds, body),
  };
}
