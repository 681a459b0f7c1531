/**
 * Where a webhook may go: https to a public address, judged by the job inputs' address policy
 * (media/address-policy.ts: only global unicast passes), at submission and again at every delivery
 * on the address actually connected to (delivery.ts); names are resolved by DNS queries with a
 * deadline of their own (media/resolvers.ts, why there). GATEWAY_WEBHOOK_ALLOW_LOOPBACK, for
 * development and tests, lets loopback addresses through, over plain http too; nothing else private.
 */
import { isIP } from 'node:net';
import { checkAddress, publicResolver, systemResolver, type Resolver } from '../../media/index.js';

export interface TargetPolicy {
  allowLoopback: boolean;
}

export const MAX_WEBHOOK_URL_LENGTH = 2048;

/**
 * The resolver for a policy: DNS queries (dnsResolver); in loopback development the system's, so
 * that names of /etc/hosts such as `localhost` work.
 */
export function resolverFor(policy: TargetPolicy): Resolver {
  return policy.allowLoopback ? systemResolver : publicResolver();
}

/** The URL's form (pure): why it cannot be a webhook endpoint, or the parsed URL. */
export function parseWebhookUrl(raw: unknown, policy: TargetPolicy): { url: URL } | { problem: string } {
  if (typeof raw !== 'string' || raw.length === 0)
    return { problem: `Expected webhook_url to be an https URL but received ${JSON.stringify(raw)}` };
  if (raw.length > MAX_WEBHOOK_URL_LENGTH)
    return {
      problem: `Expected webhook_url of at most ${MAX_WEBHOOK_URL_LENGTH} characters but received ${raw.length}`,
    };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: 'Expected webhook_url to be an absolute https URL but received one that does not parse' };
  }
  const schemes = policy.allowLoopback ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol))
    return { problem: `Expected webhook_url to be an https URL but received a ${url.protocol} URL` };
  if (url.username !== '' || url.password !== '')
    return { problem: 'Expected webhook_url without credentials (user:password@) but received some' };
  // Parsing escapes what the URL may not hold as it is (a space becomes %20): the stored form is bounded too.
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH)
    return {
      problem: `Expected webhook_url of at most ${MAX_WEBHOOK_URL_LENGTH} characters, escaped, but received ${url.href.length}`,
    };
  return { url };
}

/** The URL's host without the brackets of an IPv6 literal. */
export function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

/** Why this address may not receive a webhook of `url`'s scheme (pure), or null. */
export function addressProblem(url: URL, address: string, policy: TargetPolicy): string | null {
  const verdict = checkAddress(address);
  const loopback = !verdict.allowed && verdict.range.endsWith('loopback');
  if (policy.allowLoopback && loopback) return null;
  if (!verdict.allowed) return `${address} is a ${verdict.range} address`;
  return url.protocol === 'https:' ? null : `plain http goes only to loopback addresses, and ${address} is public`;
}

/** The host's addresses (its literal address, or every DNS answer), each judged; why not, or null. */
export async function destinationProblem(
  url: URL,
  policy: TargetPolicy,
  resolve: Resolver = resolverFor(policy),
): Promise<string | null> {
  const host = bareHost(url);
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = (await resolve(host)).map((a) => a.address);
    } catch {
      return `the host ${host} does not resolve`;
    }
    if (addresses.length === 0) return `the host ${host} has no address`;
  }
  for (const address of addresses) {
    const problem = addressProblem(url, address, policy);
    if (problem !== null) return host === address ? problem : `${host} resolves to ${problem}`;
  }
  return null;
}
