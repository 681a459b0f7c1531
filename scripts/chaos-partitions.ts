/**
 * The partition suite (issue 38, item 2): the service on a real 3-node nats-server cluster with every
 * stream R3, two gateways and two worker hosts, each process in a network namespace of its own, and
 * the network broken under load:
 *
 *   npm run chaos:partitions -- [--seconds 20] [--faults gateway-leader,worker-ack,minority,split,lossy] [--clients 4] [--keep]
 *
 * Faults, one after another, each for --seconds while clients submit (with an Idempotency-Key, retried
 * over both gateways until answered), poll, cancel (with a key too) and receive webhooks:
 *
 * - gateway-leader: gateway g1 cut off from the node leading the ledger stream;
 * - worker-ack:     worker host w1 cut off from everything, mid-job, for longer than its ack wait;
 * - minority:       the ledger stream's leader node isolated from everyone;
 * - split:          {n1, g1, w1} | {n2, n3, g2, w2};
 * - lossy:          g1's link to the nodes drops 30 % of packets and delays everything 500 ms.
 *
 * After each heal the recovery is timed: until a probe submission through each gateway is accepted
 * and its task completed. At the end the checker (scripts/chaos/checker.ts) reads the ledger, the
 * tasks, the events, the webhooks received and the clients' log, and the last line printed is one
 * JSON object: acknowledged, lost, double_charged, multiple_events, ledger_mismatches,
 * stuck_after_heal, recovery_seconds_max, and more (`repairs`: what the reconcilers and in-place
 * retries mended, from the logs). Exit status 1 when a count is not 0 or a
 * recovery took over 30 s. Needs root (network namespaces) and iptables (loss); without root it says
 * so and skips (exit 0). The namespaces hold a private /24 (10.213.0.0/24) that exists only in them.
 * With --keep the run's folder stays (its path printed last): each process's log, the nodes' stores,
 * `clients.jsonl` (every client attempt: gateway, key, status, task id) and `checked.json` (the
 * checker's input).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import sharp from 'sharp';
import { openStore, type Store } from '../src/gateway/index.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../src/paths.js';
import { EVENTS_SUBJECT_PREFIX, claimHolder, hostAndTask } from '../src/protocol/index.js';
import { sleep } from '../src/sleep.js';
import { check, type CheckedTask, type ClientOp } from './chaos/checker.js';
import * as net from './chaos/netns.js';
import { startCluster, until, type Cluster } from './nats-cluster-nodes.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const SIDECAR = path.join(PACKAGE_ROOT, 'dist', 'scripts', 'chaos', 'sidecar.js');
const SELF = path.join(PACKAGE_ROOT, 'dist', 'scripts', 'chaos-partitions.js');
const FAULTS = ['gateway-leader', 'worker-ack', 'minority', 'split', 'lossy'] as const;
type Fault = (typeof FAULTS)[number];
const PASSWORDS = {
  MW_WORKER_HOST1_PASSWORD: 'chaos-worker-1',
  MW_WORKER_HOST2_PASSWORD: 'chaos-worker-2',
  MW_GATEWAY_PASSWORD: 'chaos-gateway',
  MW_OPERATOR_PASSWORD: 'chaos-operator',
};
const M = {
  n1: { name: 'n1', octet: 1 },
  n2: { name: 'n2', octet: 2 },
  n3: { name: 'n3', octet: 3 },
  g1: { name: 'g1', octet: 11 },
  g2: { name: 'g2', octet: 12 },
  w1: { name: 'w1', octet: 21 },
  w2: { name: 'w2', octet: 22 },
  drv: { name: 'drv', octet: 200 },
} satisfies Record<string, net.Member>;
const NODES = [M.n1, M.n2, M.n3];
const NATS_PORT = 4222;
const GATEWAY_PORT = 8080;
const SINK_PORT = 9100;
const CONTROL_PORT = 7000;
const MEDIA_PORT = 8090;
/** The sidecar's links to the nodes listen on 127.0.0.1 from this port on (one per node). */
const PROXY_BASE_PORT = 14221;
/** The workers' ack wait: the worker-ack fault lasts longer than this. */
const ACK_WAIT_MS = 6000;
/** What a client waits for one attempt. */
const ATTEMPT_TIMEOUT_MS = 15_000;
/** How long after the last heal a client still retries an operation before it counts as unanswered. */
const OP_DEADLINE_AFTER_LOAD_MS = 90_000;
const RECOVERY_GOAL_S = 30;
const RECOVERY_CAP_MS = 120_000;

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    faults: { type: 'string', default: FAULTS.join(',') },
    clients: { type: 'string', default: '4' },
    keep: { type: 'boolean', default: false },
    inside: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
});

const started = Date.now();
const say = (line: string): void =>
  void process.stderr.write(`${((Date.now() - started) / 1000).toFixed(1)} s: ${line}\n`);

interface Proc {
  name: string;
  child: ChildProcess;
  head(): string;
}

function startIn(member: string, name: string, command: string[], env: NodeJS.ProcessEnv, dir: string): Proc {
  const full = [...net.wrap(member), ...command];
  const child = spawn(full[0]!, full.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const log = createWriteStream(path.join(dir, `${name}.log`));
  let head = '';
  const onData = (c: Buffer): void => {
    log.write(c);
    if (head.length < 200_000) head += c.toString();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  child.once('exit', () => log.end());
  return { name, child, head: () => head };
}

interface Account {
  id: string;
  key: string;
}

interface Answer {
  status: number;
  id?: string;
  code?: string;
}

/** Every answer the clients got, by HTTP status (0: none within ATTEMPT_TIMEOUT_MS): what customers saw. */
const answers = new Map<number, number>();
/** Every attempt, one JSON line each (`clients.jsonl` in the run's folder): what a kept run's charges are traced back to. */
let attemptLog: ((line: string) => void) | undefined;

async function post(gateway: string, route: string, account: Account, body: unknown, key: string): Promise<Answer> {
  const sent = Date.now();
  const answer = await postOnce(gateway, route, account, body, key);
  answers.set(answer.status, (answers.get(answer.status) ?? 0) + 1);
  attemptLog?.(
    `${JSON.stringify({ sent: new Date(sent).toISOString(), ms: Date.now() - sent, gateway, route, account: account.id, key, ...answer })}\n`,
  );
  return answer;
}

async function postOnce(gateway: string, route: string, account: Account, body: unknown, key: string): Promise<Answer> {
  try {
    const res = await fetch(`${gateway}${route}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${account.key}`,
        'idempotency-key': key,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
    });
    const json = (await res.json()) as { data?: { id?: string }; error?: { code?: string } };
    return {
      status: res.status,
      ...(json.data?.id === undefined ? {} : { id: json.data.id }),
      ...(json.error?.code === undefined ? {} : { code: json.error.code }),
    };
  } catch {
    return { status: 0 };
  }
}

/** Retryable: no answer, a conflict with the first attempt still being handled, limits, the service not available now. */
const retryable = (a: Answer): boolean => a.status === 0 || a.status === 409 || a.status === 429 || a.status >= 500;

/**
 * One operation as a careful client does it: one key, retried over both gateways (a load balancer's
 * choice) until a 2xx or a final refusal, or until `deadline`.
 */
async function operate(
  op: ClientOp,
  gateways: readonly string[],
  route: string,
  account: Account,
  body: unknown,
  deadline: () => number,
): Promise<void> {
  for (let i = 0; ; i += 1) {
    op.attempts += 1;
    const answer = await post(gateways[i % gateways.length]!, route, account, body, op.key);
    if (answer.status >= 200 && answer.status < 300) {
      if (answer.id !== undefined) op.acceptedIds.push(answer.id);
      op.outcome = 'acknowledged';
      return;
    }
    // A cancel that finds its task settled (it completed first) is answered for good.
    if (!retryable(answer) || (op.kind === 'cancel' && answer.code === 'TASK_NOT_PENDING')) {
      op.outcome = 'refused';
      if (answer.code !== undefined) op.refusal = answer.code;
      return;
    }
    if (Date.now() > deadline()) return;
    await sleep(300 + Math.random() * 700);
  }
}

/** Ends what this process started when it is interrupted (the namespaces, the processes in them). */
const onInterrupt: (() => void)[] = [];
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const f of onInterrupt) f();
    process.exit(130);
  });
}

async function outside(): Promise<void> {
  const why = net.unavailable();
  if (why !== null) {
    process.stdout.write(`chaos:partitions skipped: ${why}\n${JSON.stringify({ skipped: why })}\n`);
    return;
  }
  const members = Object.values(M);
  net.setup(members);
  try {
    // The suite itself runs inside the driver's namespace: it reaches the others over the bridge only.
    const args = process.argv.slice(2).filter((a) => a !== '--');
    const child = spawn('ip', ['netns', 'exec', net.namespaceOf('drv'), process.execPath, SELF, ...args, '--inside'], {
      stdio: 'inherit',
    });
    onInterrupt.push(() => {
      child.kill('SIGTERM');
      net.teardown();
    });
    process.exitCode = await new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  } finally {
    net.teardown();
  }
}

async function inside(): Promise<void> {
  const seconds = Number(values.seconds);
  const faults = (values.faults ?? '').split(',').filter(Boolean) as Fault[];
  for (const f of faults)
    if (!(FAULTS as readonly string[]).includes(f))
      throw new Error(`Expected faults among ${FAULTS.join(', ')} but received ${f}`);
  if (faults.includes('lossy') && !net.hasIptables())
    throw new Error('The lossy fault needs iptables (apt-get install -y iptables), or leave it out with --faults');
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-chaos-'));
  const clientsLog = createWriteStream(path.join(dir, 'clients.jsonl'));
  attemptLog = (line) => void clientsLog.write(line);
  const procs: Proc[] = [];
  let cluster: Cluster | undefined;
  let operatorNc: NatsConnection | undefined;
  onInterrupt.push(() => {
    for (const p of procs) p.child.kill('SIGKILL');
    for (const n of cluster?.nodes ?? []) void n.kill();
  });
  try {
    execFileSync('ip', ['link', 'set', 'lo', 'up']);
    cluster = await startCluster(dir, PASSWORDS, 3, ['host2'], {
      host: (i) => net.addressOf(NODES[i]!),
      wrap: (i) => net.wrap(NODES[i]!.name),
      ports: { port: NATS_PORT, routePort: 6222, monitorPort: 8222 },
    });
    const c = cluster;
    await until('a meta leader', () => c.metaLeader(), 60_000);
    say(`cluster of 3 up (${c.version})`);

    // Inputs for the jobs, served from the driver's namespace (a private address the workers may fetch).
    const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(32, 21).png().toBuffer();
    const media = createServer(
      (req, res) =>
        void (req.url === '/in.png'
          ? res.writeHead(200, { 'content-type': 'image/png' }).end(png)
          : res.writeHead(404).end()),
    );
    await new Promise<void>((r) => media.listen(MEDIA_PORT, net.addressOf(M.drv), r));
    const image = `http://${net.addressOf(M.drv)}:${MEDIA_PORT}/in.png`;

    const natsUrls = NODES.map((n) => `nats://${net.addressOf(n)}:${NATS_PORT}`).join(',');
    const common: NodeJS.ProcessEnv = {
      NATS_STREAM_REPLICAS: '3',
      LOG_LEVEL: 'info',
      MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
      WORKER_HEALTH_PORT: '0',
      WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0',
      WORKER_ACK_WAIT_MS: String(ACK_WAIT_MS),
      // Leased for the ack wait: w1 cut off longer than that loses its task to w2, and its late
      // settlement is refused (docs/claims-leases.md); the checker counts one event, one charge.
      WORKER_CLAIM_LEASE_MS: String(ACK_WAIT_MS),
      WORKER_HEARTBEAT_MS: '2000',
      WORKER_NAK_DELAYS_MS: '200',
    };
    const as = (user: string): NodeJS.ProcessEnv => ({
      NATS_USER: user,
      NATS_PASSWORD: PASSWORDS[`MW_${user.toUpperCase().replace(/-/g, '_')}_PASSWORD` as keyof typeof PASSWORDS],
      NATS_INBOX_PREFIX: user.startsWith('worker-') ? '_INBOX_worker' : `_INBOX_${user}`,
      NATS_CONNECTION_NAME: user,
      ...(user.startsWith('worker-') ? { WORKER_HOST_ID: user.slice('worker-'.length) } : {}),
    });
    execFileSync(process.execPath, [CLI, 'provision'], {
      env: { ...process.env, ...common, NATS_URL: natsUrls, ...as('operator') },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const results = path.join(dir, 'results');
    for (const [i, w] of [M.w1, M.w2].entries()) {
      const host = `host${i + 1}`;
      await fs.mkdir(path.join(dir, `tmp-${host}`));
      procs.push(
        startIn(
          w.name,
          `worker-${host}`,
          [process.execPath, CLI, 'serve'],
          {
            ...common,
            NATS_URL: natsUrls,
            ...as(`worker-${host}`),
            RESULTS_DIR: results,
            MEDIA_WORKER_TMP_DIR: path.join(dir, `tmp-${host}`),
          },
          dir,
        ),
      );
    }
    await until(
      'the workers to serve',
      async () => procs.every((p) => p.head().includes('media-worker serving')) || undefined,
      120_000,
    );
    const gateways: string[] = [];
    for (const g of [M.g1, M.g2]) {
      procs.push(
        startIn(
          g.name,
          `sidecar-${g.name}`,
          [
            process.execPath,
            SIDECAR,
            '--sink-port',
            String(SINK_PORT),
            '--sink-file',
            path.join(dir, `webhooks-${g.name}.jsonl`),
            '--control',
            `${net.addressOf(g)}:${CONTROL_PORT}`,
            '--nodes',
            NODES.map((n) => `${net.addressOf(n)}:${NATS_PORT}`).join(','),
            '--proxy-base-port',
            String(PROXY_BASE_PORT),
          ],
          {},
          dir,
        ),
      );
      // The gateway reaches the nodes through its sidecar's links (the lossy fault delays them there).
      const viaSidecar = NODES.map((_, i) => `nats://127.0.0.1:${PROXY_BASE_PORT + i}`).join(',');
      const gw = startIn(
        g.name,
        `gateway-${g.name}`,
        [process.execPath, CLI, 'gateway'],
        {
          ...common,
          NATS_URL: viaSidecar,
          ...as('gateway'),
          RESULTS_DIR: results,
          GATEWAY_HOST: net.addressOf(g),
          GATEWAY_PORT: String(GATEWAY_PORT),
          GATEWAY_INSTANCES: '2',
          GATEWAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
          GATEWAY_WEBHOOK_RETRY_DELAYS_MS: '500,1000,2000,5000,10000,20000',
          GATEWAY_QUOTE_TIMEOUT_MS: '10000',
          GATEWAY_REQUEST_TIMEOUT_MS: '30000',
          GATEWAY_RATE_LIMIT_PER_ACCOUNT: '100000',
          GATEWAY_RATE_LIMIT_PER_ADDRESS: '100000',
          GATEWAY_QUOTES_PER_ACCOUNT: '64',
        },
        dir,
      );
      procs.push(gw);
      gateways.push(`http://${net.addressOf(g)}:${GATEWAY_PORT}`);
    }
    for (const g of gateways)
      await until(`gateway ${g}`, async () => ((await fetch(`${g}/readyz`)).status === 200 ? true : undefined), 90_000);
    say('two gateways and two workers up');

    operatorNc = await connect({
      servers: natsUrls.split(','),
      user: 'operator',
      pass: PASSWORDS.MW_OPERATOR_PASSWORD,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    const jsm = await jetstreamManager(operatorNc, { timeout: 2000 });
    const store: Store = await openStore(operatorNc, 'GATEWAY', 3);
    const accounts: Account[] = [];
    for (let i = 0; i < 4; i += 1) {
      const { account, apiKey } = await store.accounts.create(`chaos-${i}`, 1_000_000);
      await store.webhooks.newSecret(account.id, false);
      accounts.push({ id: account.id, key: apiKey });
    }
    const webhookUrl = `http://127.0.0.1:${SINK_PORT}/hook`;

    // The load: each client submits (with a key), polls its task until it is settled (or it has
    // polled for a minute), and cancels one task in four after its first poll, with a key too. So no
    // more tasks are in flight than clients, and a recovery is not a backlog being worked off.
    const ops: ClientOp[] = [];
    let loadStopped = false;
    let opDeadline = Number.POSITIVE_INFINITY;
    const deadline = (): number => opDeadline;
    const statusOf = async (gateway: string, account: Account, id: string): Promise<string | undefined> => {
      const res = await fetch(`${gateway}/api/v1/tasks/${id}`, {
        headers: { authorization: `Bearer ${account.key}` },
        signal: AbortSignal.timeout(5000),
      }).catch(() => undefined);
      return res === undefined || res.status !== 200
        ? undefined
        : ((await res.json()) as { data?: { status?: string } }).data?.status;
    };
    const client = async (n: number): Promise<void> => {
      for (let i = 0; !loadStopped; i += 1) {
        const account = accounts[(n + i) % accounts.length]!;
        const submit: ClientOp = {
          kind: 'submit',
          key: crypto.randomUUID(),
          accountId: account.id,
          acceptedIds: [],
          attempts: 0,
          outcome: 'unanswered',
        };
        ops.push(submit);
        await operate(
          submit,
          n % 2 === 0 ? gateways : [...gateways].reverse(),
          '/api/v1/tools/upscale-image',
          account,
          { image_url: image, upscale_factor: '2', webhook_url: webhookUrl },
          deadline,
        );
        const id = submit.acceptedIds[0];
        for (let poll = 0; id !== undefined && poll < 120; poll += 1) {
          const status = await statusOf(gateways[poll % 2]!, account, id);
          if (status === 'completed' || status === 'failed') break;
          if (poll === 0 && i % 4 === 3) {
            const cancel: ClientOp = {
              kind: 'cancel',
              key: crypto.randomUUID(),
              accountId: account.id,
              taskId: id,
              acceptedIds: [],
              attempts: 0,
              outcome: 'unanswered',
            };
            ops.push(cancel);
            await operate(cancel, gateways, `/api/v1/tasks/${id}/cancel`, account, undefined, deadline);
          }
          await sleep(500);
        }
      }
    };
    const clients = Array.from({ length: Number(values.clients) }, (_, n) => client(n));

    const leaderOf = async (stream: string): Promise<net.Member> => {
      const name = await until(
        `the ${stream} leader`,
        async () => (await jsm.streams.info(stream)).cluster?.leader || undefined,
        60_000,
      );
      return NODES.find((n) => n.name === name) ?? M.n1;
    };
    const setDelay = async (g: net.Member, ms: number): Promise<void> => {
      await fetch(`http://${net.addressOf(g)}:${CONTROL_PORT}/delay?ms=${ms}`, { method: 'POST' });
    };
    /** Each fault: make it, and the function that heals it. */
    const make: Record<Fault, () => Promise<{ what: string; heal: () => Promise<void> }>> = {
      'gateway-leader': async () => {
        const leader = await leaderOf('GATEWAY_LEDGER');
        net.cut(M.g1, leader);
        return {
          what: `g1 cut off from ${leader.name} (the ledger's leader)`,
          heal: async () => net.uncut(M.g1, leader),
        };
      },
      'worker-ack': async () => {
        net.isolate(M.w1);
        return {
          what: `w1 cut off from everything (ack wait ${ACK_WAIT_MS / 1000} s)`,
          heal: async () => net.rejoin(M.w1),
        };
      },
      minority: async () => {
        const leader = await leaderOf('GATEWAY_LEDGER');
        net.isolate(leader);
        return { what: `${leader.name} (the ledger's leader) isolated`, heal: async () => net.rejoin(leader) };
      },
      split: async () => {
        const sides = [
          [M.n1, M.g1, M.w1],
          [M.n2, M.n3, M.g2, M.w2],
        ] as const;
        for (const a of sides[0]) for (const b of sides[1]) net.cut(a, b);
        return {
          what: '{n1, g1, w1} | {n2, n3, g2, w2}',
          heal: async () => {
            for (const a of sides[0]) for (const b of sides[1]) net.uncut(a, b);
          },
        };
      },
      lossy: async () => {
        net.lossy(M.g1, NODES, 30);
        await setDelay(M.g1, 500);
        return {
          what: "g1's link to the nodes: 30 % loss, 500 ms delay",
          heal: async () => {
            net.lossless(M.g1);
            await setDelay(M.g1, 0);
          },
        };
      },
    };

    /**
     * Seconds from the heal until a submission through each gateway is accepted and its task
     * completed. A probe whose task fails (refunded) is told and followed by another (a new key):
     * the service has recovered when one completes, not when the cap is reached.
     */
    const recovery = async (healedAt: number): Promise<{ seconds: number; failedProbes: string[] }> => {
      const probe = accounts[0]!;
      const failedProbes: string[] = [];
      const until = healedAt + RECOVERY_CAP_MS;
      const statusOf = async (
        g: string,
        id: string,
      ): Promise<{ status?: string; error?: { code?: string } } | undefined> => {
        const res = await fetch(`${g}/api/v1/tasks/${id}`, {
          headers: { authorization: `Bearer ${probe.key}` },
          signal: AbortSignal.timeout(5000),
        }).catch(() => undefined);
        return res === undefined
          ? undefined
          : ((await res.json().catch(() => ({}))) as { data?: { status?: string; error?: { code?: string } } }).data;
      };
      await Promise.all(
        gateways.map(async (g) => {
          for (let done = false; !done && Date.now() < until;) {
            const op: ClientOp = {
              kind: 'submit',
              key: crypto.randomUUID(),
              accountId: probe.id,
              acceptedIds: [],
              attempts: 0,
              outcome: 'unanswered',
            };
            ops.push(op);
            while (op.outcome !== 'acknowledged' && Date.now() < until) {
              const a = await post(
                g,
                '/api/v1/tools/upscale-image',
                probe,
                { image_url: image, upscale_factor: '2' },
                op.key,
              );
              op.attempts += 1;
              if (a.status >= 200 && a.status < 300 && a.id !== undefined) {
                op.acceptedIds.push(a.id);
                op.outcome = 'acknowledged';
              } else await sleep(250);
            }
            const id = op.acceptedIds[0];
            while (id !== undefined && Date.now() < until) {
              const task = await statusOf(g, id);
              if (task?.status === 'completed') done = true;
              if (task?.status === 'failed') {
                failedProbes.push(`${id} (${task.error?.code ?? 'no code'})`);
                say(`probe ${id} through ${g} failed (${task.error?.code ?? 'no code'}); another one`);
              }
              if (task?.status === 'completed' || task?.status === 'failed') break;
              await sleep(250);
            }
            if (id === undefined) break;
          }
        }),
      );
      return { seconds: (Date.now() - healedAt) / 1000, failedProbes };
    };

    const recoveries: { fault: Fault; what: string; seconds: number; failed_probes?: string[] }[] = [];
    await sleep(5000);
    for (const fault of faults) {
      const made = await make[fault]();
      say(
        `fault ${fault}: ${made.what}, for ${fault === 'worker-ack' ? Math.max(seconds, (3 * ACK_WAIT_MS) / 1000) : seconds} s`,
      );
      await sleep(fault === 'worker-ack' ? Math.max(seconds * 1000, 3 * ACK_WAIT_MS) : seconds * 1000);
      const healedAt = Date.now();
      await made.heal();
      const { seconds: s, failedProbes } = await recovery(healedAt);
      recoveries.push({
        fault,
        what: made.what,
        seconds: Number(s.toFixed(1)),
        ...(failedProbes.length === 0 ? {} : { failed_probes: failedProbes }),
      });
      say(`healed ${fault}; recovered in ${s.toFixed(1)} s`);
      await sleep(3000);
    }
    loadStopped = true;
    opDeadline = Date.now() + OP_DEADLINE_AFTER_LOAD_MS;
    await Promise.all(clients);
    say(`load stopped: ${ops.length} operations`);

    // Settle: every task completed or failed (or still pending when nothing has moved for 60 s).
    const taskIds = new Map<string, Account>();
    for (const a of accounts) {
      for (const e of await store.ledger.entries(a.id, 0, 100_000))
        if (e.value.type === 'debit') taskIds.set(e.value.taskId, a);
    }
    const statuses = new Map<string, string>();
    let lastMove = Date.now();
    while (Date.now() - lastMove < 60_000) {
      let pending = 0;
      for (const [id, a] of taskIds) {
        if (statuses.get(id) === 'completed' || statuses.get(id) === 'failed') continue;
        const task = await store.tasks.get(a.id, id).catch(() => null);
        const status = task?.value.status ?? 'missing';
        if (status !== statuses.get(id)) lastMove = Date.now();
        statuses.set(id, status);
        if (status !== 'completed' && status !== 'failed') pending += 1;
      }
      if (pending === 0) break;
      await sleep(1000);
    }
    await sleep(5000); // the last webhooks' first attempts
    const webhookIds = new Map<string, Set<string>>();
    for (const g of [M.g1, M.g2]) {
      const text = await fs.readFile(path.join(dir, `webhooks-${g.name}.jsonl`), 'utf8').catch(() => '');
      for (const line of text.split('\n').filter(Boolean)) {
        const { id, body } = JSON.parse(line) as { id?: string; body: string };
        const taskId = (JSON.parse(body) as { data?: { id?: string } }).data?.id;
        if (taskId !== undefined && id !== undefined)
          webhookIds.set(taskId, (webhookIds.get(taskId) ?? new Set()).add(id));
      }
    }
    const eventHosts = new Map<string, string[]>();
    for (const subject of Object.keys(
      (await jsm.streams.info('MEDIA_EVENTS', { subjects_filter: 'media.events.>' })).state.subjects ?? {},
    )) {
      const parsed = hostAndTask(EVENTS_SUBJECT_PREFIX, subject);
      if (parsed !== undefined) eventHosts.set(parsed.taskId, [...(eventHosts.get(parsed.taskId) ?? []), parsed.host]);
    }
    const tasks: CheckedTask[] = [];
    for (const [id, a] of taskIds) {
      const task = (await store.tasks.get(a.id, id))?.value;
      tasks.push({
        id,
        accountId: a.id,
        status: task?.status ?? 'missing',
        eventHosts: eventHosts.get(id) ?? [],
        firstClaim: await claimHolder(jsm, 'MEDIA_CLAIMS', id),
        webhooks: webhookIds.get(id)?.size ?? 0,
        wantsWebhook: task?.extras.webhookUrl !== undefined,
      });
    }
    const checked = [];
    for (const a of accounts) {
      const res = await fetch(`${gateways[1]}/api/v1/balance`, { headers: { authorization: `Bearer ${a.key}` } });
      checked.push({
        id: a.id,
        apiBalance: ((await res.json()) as { data: { credits: number } }).data.credits,
        entries: (await store.ledger.entries(a.id, 0, 100_000)).map((e) => e.value),
      });
    }
    // The checker's input, so that a kept run's verdict can be traced (and the checker run again on it).
    await fs.writeFile(path.join(dir, 'checked.json'), JSON.stringify({ ops, accounts: checked, tasks, recoveries }));
    const verdict = check(
      ops,
      checked,
      tasks,
      recoveries.map((r) => r.seconds),
    );
    for (const p of verdict.problems.slice(0, 30)) process.stdout.write(`problem: ${p}\n`);
    for (const n of verdict.notes.slice(0, 10)) process.stdout.write(`note: ${n}\n`);
    const { problems, notes: _notes, ...counts } = verdict;
    const failed =
      counts.lost +
        counts.double_charged +
        counts.multiple_events +
        counts.ledger_mismatches +
        counts.stuck_after_heal >
        0 || counts.recovery_seconds_max > RECOVERY_GOAL_S;
    process.exitCode = failed ? 1 : 0;
    media.close();
    const repairs = await repairsLogged(dir);
    process.stdout.write(
      `${JSON.stringify({ ...counts, problems: problems.length, repairs, operations: ops.length, answers: Object.fromEntries([...answers].sort((a, b) => a[0] - b[0])), max_attempts: Math.max(0, ...ops.map((o) => o.attempts)), tasks: tasks.length, recoveries, seconds_per_fault: seconds, nats: c.version.replace(/^nats-server:\s*/, ''), cores: os.cpus().length, ok: !failed })}\n`,
    );
  } finally {
    attemptLog = undefined;
    await new Promise<void>((resolve) => clientsLog.end(resolve));
    await operatorNc?.close().catch(() => undefined);
    for (const p of procs) p.child.kill('SIGKILL');
    await cluster?.stop();
    if (values.keep === true) process.stderr.write(`kept ${dir}\n`);
    else await fs.rm(dir, { recursive: true, force: true });
  }
}

/**
 * What the gateways' reconcilers and the workers' in-place retries mended in the run, by their log
 * lines (src/gateway/settlement/debit-reconciler.ts, event-reconciler.ts; src/worker/job-runner.ts): the
 * repairs of what nats-server 2.10's skipped redeliveries would have left stuck.
 */
async function repairsLogged(dir: string): Promise<Record<string, number>> {
  const lines = {
    tasks_made: "A debit had no task after the outbox's time",
    jobs_republished: "A pending task's job had not been stored",
    events_settled_late: 'A stored event had not settled its task',
    claims_retried: 'Could not claim the task; retrying',
  };
  const counts = Object.fromEntries(Object.keys(lines).map((k) => [k, 0]));
  for (const name of await fs.readdir(dir)) {
    if (!/^(gateway|worker)-.*\.log$/.test(name)) continue;
    const text = await fs.readFile(path.join(dir, name), 'utf8');
    for (const [k, line] of Object.entries(lines)) counts[k]! += text.split(line).length - 1;
  }
  return counts;
}

if (values.help === true) {
  process.stdout.write(
    'Usage: npm run chaos:partitions -- [--seconds 20] [--faults gateway-leader,worker-ack,minority,split,lossy] [--clients 4] [--keep]\n',
  );
} else {
  (values.inside === true ? inside() : outside()).then(
    () => process.exit(),
    (err: unknown) => {
      process.stderr.write(`chaos:partitions: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exit(1);
    },
  );
}
