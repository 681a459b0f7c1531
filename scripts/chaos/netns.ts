/**
 * The partition suite's network (scripts/chaos-partitions.ts): one Linux network namespace per
 * process (nats nodes, gateways, workers, the driver), each with a veth to a bridge in a hub
 * namespace, on a private /24 that exists only inside these namespaces. Faults are made inside the
 * namespaces only: a pair cut with blackhole routes on both sides, a member isolated by taking its
 * link down, loss on a member's traffic to the nodes with iptables' `statistic` match. Needs root
 * and `ip` (iproute2); loss needs `iptables`. Every name starts with the prefix, so `teardown`
 * removes exactly what `setup` made.
 */
import { execFileSync } from 'node:child_process';

export const PREFIX = 'mwc';
export const SUBNET = '10.213.0';

export interface Member {
  /** Short name: n1, g1, w1, drv. */
  name: string;
  /** Last octet of its address. */
  octet: number;
}

export const namespaceOf = (m: string): string => `${PREFIX}-${m}`;
export const addressOf = (m: Member): string => `${SUBNET}.${m.octet}`;
const hub = namespaceOf('hub');
const bridge = `${PREFIX}br0`;

function ip(args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function inside(member: string, command: string[]): void {
  execFileSync('ip', ['netns', 'exec', namespaceOf(member), ...command], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Why the suite cannot run here, or null. */
export function unavailable(): string | null {
  if (process.getuid?.() !== 0) return 'the partition suite needs root (network namespaces)';
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' });
  } catch {
    return '`ip netns` is not available (iproute2)';
  }
  return null;
}

export function hasIptables(): boolean {
  try {
    execFileSync('iptables', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Namespaces left by an earlier run that died: removed before a new one starts. */
export function teardown(): void {
  const names = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n.startsWith(`${PREFIX}-`));
  for (const n of names) {
    try {
      ip(['netns', 'del', n]);
    } catch {
      // already gone
    }
  }
}

export function setup(members: readonly Member[]): void {
  teardown();
  ip(['netns', 'add', hub]);
  ip(['-n', hub, 'link', 'add', bridge, 'type', 'bridge']);
  ip(['-n', hub, 'link', 'set', bridge, 'up']);
  for (const m of members) {
    const ns = namespaceOf(m.name);
    ip(['netns', 'add', ns]);
    ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    // The pair is made inside the member's namespace, then one end moved to the hub: nothing is
    // ever created in the namespace this script started in.
    ip(['-n', ns, 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', `${PREFIX}-${m.name}`]);
    ip(['-n', ns, 'link', 'set', `${PREFIX}-${m.name}`, 'netns', hub]);
    ip(['-n', hub, 'link', 'set', `${PREFIX}-${m.name}`, 'master', bridge]);
    ip(['-n', hub, 'link', 'set', `${PREFIX}-${m.name}`, 'up']);
    ip(['-n', ns, 'addr', 'add', `${addressOf(m)}/24`, 'dev', 'eth0']);
    ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
  }
}

/** `a` and `b` no longer reach each other (both directions; established connections go silent). */
export function cut(a: Member, b: Member): void {
  inside(a.name, ['ip', 'route', 'add', 'blackhole', `${addressOf(b)}/32`]);
  inside(b.name, ['ip', 'route', 'add', 'blackhole', `${addressOf(a)}/32`]);
}

export function uncut(a: Member, b: Member): void {
  for (const [x, y] of [
    [a, b],
    [b, a],
  ] as const) {
    try {
      inside(x.name, ['ip', 'route', 'del', 'blackhole', `${addressOf(y)}/32`]);
    } catch {
      // not cut
    }
  }
}

/** The member's link down: it reaches nobody and nobody reaches it. */
export function isolate(m: Member): void {
  ip(['-n', hub, 'link', 'set', `${PREFIX}-${m.name}`, 'down']);
}

export function rejoin(m: Member): void {
  ip(['-n', hub, 'link', 'set', `${PREFIX}-${m.name}`, 'up']);
}

/** Drops `percent` of the member's packets to and from `peers`, at random (iptables `statistic`). */
export function lossy(m: Member, peers: readonly Member[], percent: number): void {
  for (const p of peers) {
    const probability = (percent / 100).toFixed(2);
    inside(m.name, [
      'iptables',
      '-A',
      'OUTPUT',
      '-d',
      addressOf(p),
      '-m',
      'statistic',
      '--mode',
      'random',
      '--probability',
      probability,
      '-j',
      'DROP',
    ]);
    inside(m.name, [
      'iptables',
      '-A',
      'INPUT',
      '-s',
      addressOf(p),
      '-m',
      'statistic',
      '--mode',
      'random',
      '--probability',
      probability,
      '-j',
      'DROP',
    ]);
  }
}

export function lossless(m: Member): void {
  inside(m.name, ['iptables', '-F', 'OUTPUT']);
  inside(m.name, ['iptables', '-F', 'INPUT']);
}

/** The command line that runs `command` inside the member's namespace. */
export function wrap(member: string): string[] {
  return ['ip', 'netns', 'exec', namespaceOf(member)];
}
