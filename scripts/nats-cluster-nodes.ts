/**
 * A 3-node nats-server cluster on 127.0.0.1 for scripts/nats-cluster.ts: each node with its own
 * client, route and monitoring port and store, the shipped users (deploy/nats/media-users.conf,
 * with more worker hosts where asked: scripts/nats-users.ts),
 * JetStream with `sync_interval: always` where the server knows it (2.10+). Nodes can be SIGKILLed
 * and restarted on the same ports and store; the meta leader is read from each node's /jsz.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { sleep } from '../src/sleep.js';
import { usersWithHosts } from './nats-users.js';

export interface ClusterNode {
  name: string;
  clientUrl: string;
  monitorUrl: string;
  running(): boolean;
  /** /healthz's answer: "ok", or why not (listening, JetStream caught up with the cluster). */
  health(): Promise<string>;
  kill(): Promise<void>;
  start(): Promise<void>;
}

export interface Cluster {
  nodes: ClusterNode[];
  /** All client URLs, comma-separated (NATS_URL). */
  urls: string;
  version: string;
  /** The meta leader's name as the running nodes report it, when they agree. */
  metaLeader(): Promise<string | undefined>;
  byName(name: string): ClusterNode;
  stop(): Promise<void>;
}

/** `probe`'s first defined value, asked every `everyMs` (a probe that throws counts as undefined), or a timeout error. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

export function natsServerBin(): string {
  return process.env['NATS_SERVER_BIN'] ?? '/usr/sbin/nats-server';
}

/** `v2.9.10` -> [2, 9, 10]. */
export function parseServerVersion(text: string): [number, number, number] {
  const m = /v?(\d+)\.(\d+)\.(\d+)/.exec(text);
  if (m === null) throw new Error(`Expected a nats-server version but received ${JSON.stringify(text.trim())}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

/** Whether `version` is `floor` or later. */
export function versionAtLeast(version: readonly number[], floor: readonly number[]): boolean {
  for (let i = 0; i < floor.length; i += 1) {
    const a = version[i] ?? 0;
    const b = floor[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('Expected a TCP address');
  return address.port;
}

/** `host`: the node's address (127.0.0.1 unless given); `routes`: its peers' route ports, on `routeHosts` (127.0.0.1 unless given). */
export function nodeConfig(o: {
  name: string;
  port: number;
  routePort: number;
  monitorPort: number;
  routes: number[];
  storeDir: string;
  usersInclude: string;
  syncAlways: boolean;
  host?: string;
  routeHosts?: string[];
}): string {
  const host = o.host ?? '127.0.0.1';
  return [
    `server_name: ${o.name}`,
    `listen: ${host}:${o.port}`,
    `http: ${host}:${o.monitorPort}`,
    `jetstream { store_dir: "${o.storeDir}"${o.syncAlways ? ', sync_interval: always' : ''} }`,
    `cluster { name: media, listen: ${host}:${o.routePort}, routes: [${o.routes.map((p, i) => `nats-route://${o.routeHosts?.[i] ?? '127.0.0.1'}:${p}`).join(', ')}] }`,
    `include "${o.usersInclude}"`,
    '',
  ].join('\n');
}

/**
 * Where the nodes run, for scripts/chaos-partitions.ts: node i (0-based) on its own address and fixed
 * ports, started through `wrap` (`ip netns exec <namespace>`). Without it, 127.0.0.1 and free ports.
 */
export interface NodePlacement {
  host(i: number): string;
  wrap(i: number): string[];
  ports: { port: number; routePort: number; monitorPort: number };
}

/** `hosts`: worker hosts besides the shipped `host1` (each with `MW_WORKER_<HOST>_PASSWORD` in `env`). */
export async function startCluster(
  dir: string,
  env: NodeJS.ProcessEnv,
  size = 3,
  hosts: readonly string[] = [],
  placement?: NodePlacement,
): Promise<Cluster> {
  const { stdout } = await promisify(execFile)(natsServerBin(), ['--version']);
  const version = parseServerVersion(stdout);
  const syncAlways = versionAtLeast(version, [2, 10]);
  await fs.writeFile(path.join(dir, 'media-users.conf'), await usersWithHosts(hosts));
  const ports = await Promise.all(
    Array.from(
      { length: size },
      async () =>
        placement?.ports ?? { port: await freePort(), routePort: await freePort(), monitorPort: await freePort() },
    ),
  );
  const nodes = await Promise.all(
    ports.map(async (p, i) => {
      const name = `n${i + 1}`;
      const config = path.join(dir, `${name}.conf`);
      await fs.writeFile(
        config,
        nodeConfig({
          name,
          ...p,
          routes: ports.map((q) => q.routePort),
          storeDir: path.join(dir, name),
          usersInclude: 'media-users.conf',
          syncAlways,
          ...(placement === undefined
            ? {}
            : { host: placement.host(i), routeHosts: ports.map((_, j) => placement.host(j)) }),
        }),
      );
      return clusterNode(
        name,
        config,
        p.port,
        p.monitorPort,
        env,
        path.join(dir, `${name}.log`),
        placement === undefined ? undefined : { host: placement.host(i), wrap: placement.wrap(i) },
      );
    }),
  );
  await Promise.all(nodes.map((n) => n.start()));
  const cluster: Cluster = {
    nodes,
    urls: nodes.map((n) => n.clientUrl).join(','),
    version: stdout.trim(),
    async metaLeader() {
      const leaders = await Promise.all(
        nodes.filter((n) => n.running()).map((n) => jsz(n).then((j) => j?.meta_cluster?.leader)),
      );
      const first = leaders[0];
      return first !== undefined && first !== '' && leaders.every((l) => l === first) ? first : undefined;
    },
    byName(name) {
      const node = nodes.find((n) => n.name === name);
      if (node === undefined) throw new Error(`Expected a node of the cluster but received ${JSON.stringify(name)}`);
      return node;
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill()));
    },
  };
  return cluster;
}

interface Jsz {
  meta_cluster?: { leader?: string };
}

async function jsz(node: ClusterNode): Promise<Jsz | undefined> {
  try {
    const res = await fetch(`${node.monitorUrl}/jsz`, { signal: AbortSignal.timeout(1000) });
    return (await res.json()) as Jsz;
  } catch {
    return undefined;
  }
}

function clusterNode(
  name: string,
  config: string,
  port: number,
  monitorPort: number,
  env: NodeJS.ProcessEnv,
  logFile: string,
  at?: { host: string; wrap: string[] },
): ClusterNode {
  let child: ChildProcess | undefined;
  const host = at?.host ?? '127.0.0.1';
  const clientUrl = `nats://${host}:${port}`;
  const monitorUrl = `http://${host}:${monitorPort}`;
  const command = [...(at?.wrap ?? []), natsServerBin(), '-c', config];
  return {
    name,
    clientUrl,
    monitorUrl,
    running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
    health: () =>
      fetch(`${monitorUrl}/healthz`, { signal: AbortSignal.timeout(1000) }).then(
        async (r) => (r.status === 200 ? 'ok' : `${r.status} ${await r.text()}`),
        (err: unknown) => String(err),
      ),
    async kill() {
      const proc = child;
      if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGKILL');
      await exited;
    },
    async start() {
      const log = await fs.open(logFile, 'a');
      const proc = spawn(command[0]!, command.slice(1), {
        env: { ...process.env, ...env },
        stdio: ['ignore', log.fd, log.fd],
      });
      child = proc;
      proc.once('exit', () => void log.close());
      for (let i = 0; i < 400; i += 1) {
        if (proc.exitCode !== null) throw new Error(`nats-server ${name} exited with ${proc.exitCode}; see ${logFile}`);
        // Listening is enough here: a node is healthy only once the cluster it joins has formed.
        const ok = await fetch(`${monitorUrl}/varz`, { signal: AbortSignal.timeout(500) }).then(
          () => true,
          () => false,
        );
        if (ok) return;
        await sleep(50);
      }
      throw new Error(`nats-server ${name} did not answer on ${monitorUrl} in time; see ${logFile}`);
    },
  };
}
