/**
 * Identifiers and secrets. Task ids sort by creation time (history pages are in that order) and
 * follow the protocol's task id rule (subject token and path segment). API keys carry 256 random
 * bits, so a plain SHA-256 is enough to store them: a slow password hash protects guessable
 * secrets, and these are not guessable.
 */
import { createHash, randomBytes } from 'node:crypto';

const TIME_DIGITS = 10;

/** `t_<ms since epoch, base36, 10 digits><12 random base36>`: sortable, unique, subject-safe. */
export function newTaskId(now = Date.now()): string {
  return `t_${now.toString(36).padStart(TIME_DIGITS, '0')}${randomBase36(12)}`;
}

export function newAccountId(): string {
  return `acct_${randomBase36(16)}`;
}

/** A new API key: `mwk_` and 43 base64url characters (32 random bytes). */
export function newApiKey(): string {
  return `mwk_${randomBytes(32).toString('base64url')}`;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export const ACCOUNT_ID_PATTERN = /^acct_[a-z0-9]{16}$/;

function randomBase36(n: number): string {
  const bytes = randomBytes(n);
  let out = '';
  for (const b of bytes) out += (b % 36).toString(36);
  return out;
}
