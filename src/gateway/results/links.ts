/**
 * Expiring links to the files this gateway serves (results and uploads under /results/): the URL
 * carries `expires` (epoch seconds) and `sig`, an HMAC-SHA256 of the path and the expiry under
 * GATEWAY_LINK_SECRET, the scheme of S3's pre-signed URLs reduced to what is needed here. Any
 * gateway with the same secret verifies any other's links; nothing is stored.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type LinkCheck = 'valid' | 'expired' | 'invalid';

export interface LinkSigner {
  /** `url` with `expires` and `sig` added. */
  sign(url: string, expiresAtMs: number): string;
  /** Whether `pathname` with this query is a link this secret signed, and still alive at `nowMs`. */
  check(pathname: string, query: { expires?: unknown; sig?: unknown }, nowMs: number): LinkCheck;
}

export function linkSigner(secret: string): LinkSigner {
  const mac = (pathname: string, expires: string) =>
    createHmac('sha256', secret).update(`${pathname}\n${expires}`).digest();
  return {
    sign(url, expiresAtMs) {
      const u = new URL(url);
      const expires = String(Math.floor(expiresAtMs / 1000));
      u.searchParams.set('expires', expires);
      u.searchParams.set('sig', mac(u.pathname, expires).toString('base64url'));
      return u.toString();
    },
    check(pathname, query, nowMs) {
      const { expires, sig } = query;
      if (typeof expires !== 'string' || typeof sig !== 'string' || !/^\d{1,12}$/.test(expires)) return 'invalid';
      const expected = mac(pathname, expires);
      const given = Buffer.from(sig, 'base64url');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
      return Number(expires) * 1000 <= nowMs ? 'expired' : 'valid';
    },
  };
}

/** Every string in `value` under `base` signed (a result may hold several URLs: two songs and their covers). */
export function signUrlsUnder(value: unknown, base: string, sign: (url: string) => string): unknown {
  if (typeof value === 'string') return value.startsWith(base) ? sign(value) : value;
  if (Array.isArray(value)) return value.map((v) => signUrlsUnder(v, base, sign));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, signUrlsUnder(v, base, sign)]));
  return value;
}
