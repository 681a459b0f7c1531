/**
 * Name resolution for customers' URLs (job inputs, webhook endpoints). A customer's host is
 * resolved by DNS queries (c-ares, on the event loop, with a deadline of its own), not by the
 * system's getaddrinfo: getaddrinfo runs on libuv's four threads, which every file read and write
 * of the process shares, and waits as long as the system says. A URL on a domain whose name servers
 * never answer would hold a thread per fetch (four at once stall every file operation, other
 * customers' jobs included); a DNS query costs a socket and ends within the deadline below.
 * The system's resolver (so /etc/hosts and search domains count) is for what an operator named:
 * private origins, and private URLs allowed in development.
 */
import { lookup, Resolver as DnsResolver } from 'node:dns/promises';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The system's resolver (getaddrinfo: /etc/hosts, search domains, then DNS). */
export const systemResolver: Resolver = async (hostname) =>
  (await lookup(hostname, { all: true, verbatim: true })).map((a): ResolvedAddress => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/** A query's first wait and its tries (c-ares doubles the wait each try): at most about 4.5 s, both families at once. */
const DNS_TIMEOUT_MS = 1500;
const DNS_TRIES = 2;

/** DNS queries, A and AAAA at once. `servers`: the name servers (default: the system's, from /etc/resolv.conf). */
export function dnsResolver(servers?: readonly string[]): Resolver {
  const dns = new DnsResolver({ timeout: DNS_TIMEOUT_MS, tries: DNS_TRIES });
  if (servers !== undefined) dns.setServers(servers);
  return async (hostname) => {
    const [v4, v6] = await Promise.allSettled([dns.resolve4(hostname), dns.resolve6(hostname)]);
    const answers = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address): ResolvedAddress => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address): ResolvedAddress => ({ address, family: 6 })) : []),
    ];
    if (answers.length === 0 && v4.status === 'rejected') throw v4.reason;
    return answers;
  };
}

let shared: Resolver | undefined;

/** The resolver for public customers' hosts: one DNS client for the process, made on first use. */
export function publicResolver(): Resolver {
  shared ??= dnsResolver();
  return shared;
}
