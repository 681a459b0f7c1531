/**
 * Which network addresses a job's input may be fetched from. The rule is an allow-list: only global
 * unicast addresses pass (for IPv6, only inside 2000::/3), so every special range ipaddr.js knows
 * (private, loopback, link-local with the cloud metadata service at 169.254.169.254, carrier-grade
 * NAT, multicast, unspecified, broadcast, reserved, unique-local, NAT64, 6to4, Teredo, ...) and any
 * range it does not know is refused. IPv4-mapped IPv6 addresses are judged as the IPv4 address they
 * carry. Pure, so that the table of cases is tested directly.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface AddressPolicy {
  /** Local development and tests: every address is allowed. */
  allowPrivate?: boolean;
  /** Extra CIDR ranges treated as public, e.g. an internal object store (also the tests' seam). */
  allowedCidrs?: readonly string[];
}

/**
 * Whether `url` lies under one of the named private prefixes (parsePrivateOrigins' form): compared
 * on the parsed origin and path, so credentials, `..` and percent-encoded dots (all resolved by
 * the URL parser) cannot step outside a prefix.
 */
export function underPrivatePrefix(url: URL, prefixes: readonly string[]): boolean {
  const target = `${url.origin}${url.pathname}`;
  return prefixes.some((prefix) => target.startsWith(prefix));
}

export type AddressVerdict = { allowed: true } | { allowed: false; range: string };

const RANGE_WORDS: Record<string, string> = {
  private: 'private',
  loopback: 'loopback',
  linkLocal: 'link-local',
  carrierGradeNat: 'carrier-grade NAT',
  multicast: 'multicast',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  reserved: 'reserved',
  uniqueLocal: 'unique-local',
  ipv4Mapped: 'IPv4-mapped',
  rfc6145: 'IPv4-translated',
  rfc6052: 'NAT64',
  '6to4': '6to4',
  teredo: 'Teredo',
  deprecatedSiteLocal: 'site-local',
  discard: 'discard-only',
  benchmarking: 'benchmarking',
  as112: 'AS112',
  as112v6: 'AS112',
  amt: 'AMT',
};

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses CIDR strings ("10.1.2.0/24", "fd00::/8", or a bare address); throws on a malformed entry. */
export function parseCidrs(list: readonly string[]): Range[] {
  return list.map((entry): Range => {
    try {
      if (entry.includes('/')) return ipaddr.parseCIDR(entry);
      const addr = ipaddr.parse(entry);
      return [addr, addr.kind() === 'ipv4' ? 32 : 128];
    } catch {
      throw new Error(`Expected a CIDR range for the allowed address list but received "${entry}"`);
    }
  });
}

function inAny(addr: ipaddr.IPv4 | ipaddr.IPv6, ranges: Range[]): boolean {
  return ranges.some((range) => range[0].kind() === addr.kind() && addr.match(range));
}

/** The verdict for one address as a string (as DNS or `socket.remoteAddress` gives it). */
export function checkAddress(ip: string, policy: AddressPolicy = {}): AddressVerdict {
  const text = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (isIP(text) === 0) return { allowed: false, range: 'invalid' };
  if (policy.allowPrivate === true) return { allowed: true };

  let addr: ipaddr.IPv4 | ipaddr.IPv6 = ipaddr.parse(text);
  const mapped = addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress();
  if (mapped) addr = (addr as ipaddr.IPv6).toIPv4Address();

  if (
    policy.allowedCidrs !== undefined &&
    policy.allowedCidrs.length > 0 &&
    inAny(addr, parseCidrs(policy.allowedCidrs))
  ) {
    return { allowed: true };
  }

  const range = addr.range();
  const prefix = mapped ? 'IPv4-mapped ' : '';
  if (range !== 'unicast') return { allowed: false, range: prefix + (RANGE_WORDS[range] ?? range) };
  if (addr.kind() === 'ipv6' && !addr.match(GLOBAL_UNICAST_V6)) return { allowed: false, range: 'non-global IPv6' };
  return { allowed: true };
}
