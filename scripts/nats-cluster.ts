/**
 * The service on a 3-node JetStream cluster that loses nodes: anyone can rerun it and compare.
 *
 *   npm run cluster:failover -- [--accounts 4] [--concurrency 6] [--down-s 20] [--steady-s 6] [--write-docs] [--keep]
 *
 * Starts three nats-servers on 127.0.0.1 (the shipped users of deploy/nats/media-users.conf with a
 * second worker host added as docs/operations/fleet.md says ("Worker hosts"),
 * `sync_interval: always` where the server knows it), a gateway and two worker hosts given all three
 * URLs and NATS_STREAM_REPLICAS=3 (so every stream is R3), and creates accounts. Submissions (image
 * upscales, 1 in 5 failing after acceptance and refunded) and top-ups run all along. It SIGKILLs
 * the meta leader, restarts it `--down-s` later, waits until it is healthy, then does the same to
 * the ledger stream's leader. When the load stops and every task has settled it checks: each task
 * debited once, refunded at most once and exactly when it failed, exactly one event per task and
 * that from the host whose claim of it is the first,
 * every balance equal to its ledger's sum; and it counts submissions accepted while a node was
 * down, the time to a new leader and to a healthy node, and the clients' own reconnections (no
 * client process is restarted). Exit status 1 when a check fails. `--write-docs` writes the figures
 * into docs/operations/recover.md ("A cluster losing nodes").
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import sharp from 'sharp';
import { markdownTable } from '../bench/doc-block.js';
import { openStore, type Store } from '../src/gateway/index.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../src/paths.js';
import { EVENTS_SUBJECT_PREFIX, anyHostEventSubject, claimHolder, hostAndTask } from '../src/protocol/index.js';
import { sleep } from '../src/sleep.js';
import { auditLedger, type AuditedTask } from './cluster-audit.js';
import { replaceMarkedBlock } from './marked-block.js';
import { startCluster, until, type Cluster } from './nats-cluster-nodes.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const RECOVER_DOC = path.join(PACKAGE_ROOT, 'docs', 'operations', 'recover.md');
const BLOCK = ['<!-- nats-cluster:start -->', '<!-- nats-cluster:end -->'] as const;
/** Worker hosts: `host1` of the shipped file and one more, each a user of its own (per-host claims). */
const HOSTS = ['host1', 'host2'] as const;
const PASSWORDS = {
  MW_WORKER_HOST1_PASSWORD: 'cluster-worker-1',
  MW_WORKER_HOST2_PASSWORD: 'cluster-worker-2',
  MW_GATEWAY_PASSWORD: 'cluster-gateway',
  MW_OPERATOR_PASSWORD: 'cluster-operator',
};
const LEDGER_STREAM = 'GATEWAY_LEDGER';
/** A client's patience: a quote request lost with a dying node is only answered (503) after GATEWAY_QUOTE_TIMEOUT_MS. */
const CLIENT_TIMEOUT_MS = 30_000;
/** A task still pending when no task has settled for this long is stuck (reported, not waited for). */
const SETTLE_STALL_MS = 60_000;

const seconds = (ms: number): string => (ms / 1000).toFixed(1);

interface Submission {
  at: number;
  status: number;
  id?: string;
  accountId: string;
}

interface Kill {
  what: string;
  node: string;
  killedAt: number;
  newLeader: string;
  newLeaderAfterMs: number;
  restartedAt: number;
  caughtUpAfterMs: number;
}

interface ClientProcess {
  name: string;
  child: ChildProcess;
  /** The start of its output (the lines a start-up is recognised by). */
  head(): string;
  /** Its whole output, written to `<dir>/<name>.log` as it comes. */
  logFile: string;
  /** Times its NATS connection came back. */
  reconnections(): number;
}

const HEAD_CHARS = 200_000;
const RECONNECTED = /NATS (reconnected|connection restored)/g;

function startClient(name: string, args: string[], env: NodeJS.ProcessEnv, dir: string): ClientProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logFile = path.join(dir, `${name}.log`);
  const log = createWriteStream(logFile);
  let head = '';
  let reconnections = 0;
  let partial = '';
  const onData = (c: Buffer): void => {
    log.write(c);
    const text = c.toString();
    if (head.length < HEAD_CHARS) head += text;
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) reconnections += (line.match(RECONNECTED) ?? []).length;
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  child.once('exit', () => log.end());
  return { name, child, head: () => head, logFile, reconnections: () => reconnections };
}

async function streamLeader(jsm: JetStreamManager, stream: string): Promise<string | undefined> {
  const info = await jsm.streams.info(stream);
  return info.cluster?.leader || undefined;
}

const STREAMS = [
  'MEDIA_JOBS',
  'MEDIA_EVENTS',
  'MEDIA_JOBS_ADVISORIES',
  'MEDIA_CLAIMS',
  'GATEWAY_ACCOUNTS',
  'GATEWAY_LEDGER',
  'GATEWAY_TASKS',
  'GATEWAY_WEBHOOKS',
  'GATEWAY_IDEMPOTENCY',
];

async function caughtUp(jsm: JetStreamManager, node: string): Promise<boolean> {
  for (const stream of STREAMS) {
    const cluster = (await jsm.streams.info(stream)).cluster;
    if (cluster?.leader !== node && !(cluster?.replicas ?? []).some((r) => r.name === node && r.current)) return false;
  }
  return true;
}

/**
 * What the cluster knows of a task that never settled: its job still in the jobs stream (and how
 * often the consumer has delivered it), its events, captured max-deliveries advisories, and every
 * client log line that names it.
 */
async function diagnoseTask(jsm: JetStreamManager, taskId: string, clients: readonly ClientProcess[]): Promise<string> {
  const lines = [`task ${taskId} did not settle:`];
  const jobs = await jsm.streams.info('MEDIA_JOBS');
  lines.push(`  MEDIA_JOBS: ${jobs.state.messages} messages, seq ${jobs.state.first_seq}..${jobs.state.last_seq}`);
  for (let seq = jobs.state.first_seq; seq <= jobs.state.last_seq && jobs.state.messages > 0; seq += 1) {
    const m = await jsm.streams.getMessage('MEDIA_JOBS', { seq }).catch(() => null);
    if (m?.header?.get('Nats-Msg-Id') === taskId)
      lines.push(`  its job is still in MEDIA_JOBS at seq ${seq} (${m.subject})`);
  }
  for (const c of await jsm.consumers.list('MEDIA_JOBS').next()) {
    lines.push(
      `  consumer ${c.name}: delivered ${c.delivered.stream_seq}, ack floor ${c.ack_floor.stream_seq}, pending ${c.num_pending}, ack pending ${c.num_ack_pending}, redelivered ${c.num_redelivered}`,
    );
  }
  const events = await jsm.streams.info('MEDIA_EVENTS', { subjects_filter: anyHostEventSubject(taskId) });
  lines.push(
    `  events: ${JSON.stringify(events.state.subjects ?? {})}; first claim: ${String(await claimHolder(jsm, 'MEDIA_CLAIMS', taskId))}`,
  );
  const advisories = await jsm.streams.info('MEDIA_JOBS_ADVISORIES');
  lines.push(`  MEDIA_JOBS_ADVISORIES: ${advisories.state.messages} messages`);
  for (const c of clients) {
    const output = await fs.readFile(c.logFile, 'utf8').catch(() => '');
    for (const line of output.split('\n').filter((l) => l.includes(taskId)))
      lines.push(`  ${c.name}: ${line.slice(0, 600)}`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      accounts: { type: 'string', default: '4' },
      concurrency: { type: 'string', default: '6' },
      'down-s': { type: 'string', default: '20' },
      'steady-s': { type: 'string', default: '6' },
      'write-docs': { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    process.stdout.write(
      'Usage: node dist/scripts/nats-cluster.js [--accounts 4] [--concurrency 6] [--down-s 20] [--steady-s 6] [--write-docs] [--keep]\n',
    );
    return;
  }
  const accountCount = Number(values.accounts);
  const concurrency = Number(values.concurrency);
  const downMs = Number(values['down-s']) * 1000;
  const steadyMs = Number(values['steady-s']) * 1000;
  const started = Date.now();
  const loadAtStart = os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-nats-cluster-'));
  const children: ClientProcess[] = [];
  let cluster: Cluster | undefined;
  try {
    cluster = await startCluster(dir, PASSWORDS, 3, HOSTS.slice(1));
    const c = cluster;
    const firstMeta = await until('a meta leader', () => c.metaLeader());
    process.stderr.write(`cluster of 3 (${c.version}) up, meta leader ${firstMeta}\n`);

    // Inputs: /ok.png always, /flaky-<n>.png a PNG for the quote and garbage for the job.
    const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer();
    const seen = new Set<string>();
    const http = createServer((req, res) => {
      const url = req.url ?? '';
      if (url === '/ok.png') res.writeHead(200).end(png);
      else if (url.startsWith('/flaky-')) {
        res.writeHead(200).end(seen.has(url) ? Buffer.from('garbage') : png);
        seen.add(url);
      } else res.writeHead(404).end();
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const media = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

    const common: NodeJS.ProcessEnv = {
      NATS_URL: c.urls,
      NATS_STREAM_REPLICAS: '3',
      LOG_LEVEL: 'info',
      MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
      MEDIA_WORKER_TMP_DIR: path.join(dir, 'tmp'),
      RESULTS_DIR: path.join(dir, 'results'),
      WORKER_HEALTH_PORT: '0',
      WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0',
      WORKER_MAX_DELIVER: '2',
      WORKER_NAK_DELAYS_MS: '200',
    };
    await fs.mkdir(path.join(dir, 'tmp'));
    const as = (user: string): NodeJS.ProcessEnv => ({
      NATS_USER: user,
      NATS_PASSWORD: PASSWORDS[`MW_${user.toUpperCase().replace(/-/g, '_')}_PASSWORD` as keyof typeof PASSWORDS],
      NATS_INBOX_PREFIX: user.startsWith('worker-') ? '_INBOX_worker' : `_INBOX_${user}`,
      ...(user.startsWith('worker-') ? { WORKER_HOST_ID: user.slice('worker-'.length) } : {}),
    });
    // The operator provisions every stream and consumer (R3) first: workers and gateways only bind.
    execFileSync(process.execPath, [CLI, 'provision'], {
      env: { ...process.env, ...common, ...as('operator') },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    // Two worker hosts, each its own user: a task one of them claimed first is handed back by the other.
    for (const host of HOSTS)
      children.push(
        startClient(
          `worker-${host}`,
          ['serve'],
          { ...common, ...as(`worker-${host}`), NATS_CONNECTION_NAME: `worker-${host}` },
          dir,
        ),
      );
    await until(
      'the workers to serve',
      async () => children.every((w) => w.head().includes('media-worker serving')) || undefined,
      90_000,
      200,
    );
    const gateway = startClient(
      'gateway',
      ['gateway'],
      { ...common, ...as('gateway'), GATEWAY_HOST: '127.0.0.1', GATEWAY_PORT: '0' },
      dir,
    );
    children.push(gateway);
    const api = await until(
      'the gateway to listen',
      async () => /"url":"(http:\/\/[^"]+)","msg":"media-worker gateway listening"/.exec(gateway.head())?.[1],
      60_000,
      200,
    );

    // The operator: accounts and top-ups through the same store code as `media-worker accounts`.
    const operatorNc = await connect({
      servers: c.urls.split(','),
      user: 'operator',
      pass: PASSWORDS.MW_OPERATOR_PASSWORD,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    // Short API timeouts: the leader probes poll through the node that may just have died.
    const jsm = await jetstreamManager(operatorNc, { timeout: 1000 });
    const store: Store = await openStore(operatorNc, 'GATEWAY', 3);
    const accounts: { id: string; key: string }[] = [];
    for (let i = 0; i < accountCount; i += 1) {
      const { account, apiKey } = await store.accounts.create(`cluster-${i}`, 10_000);
      accounts.push({ id: account.id, key: apiKey });
    }
    const replicas = await Promise.all(
      STREAMS.map(async (s) => `${s} R${(await jsm.streams.info(s)).config.num_replicas}`),
    );
    process.stderr.write(`streams: ${replicas.join(', ')}\n`);

    // Load: submissions and top-ups until told to stop.
    const submissions: Submission[] = [];
    let topupsOk = 0;
    let topupsFailed = 0;
    let stopLoad = false;
    let n = 0;
    const loop = async (): Promise<void> => {
      while (!stopLoad) {
        n += 1;
        const account = accounts[n % accounts.length] as { id: string; key: string };
        if (n % 7 === 0) {
          await store.ledger.topup(account.id, 5, 'cluster run').then(
            () => (topupsOk += 1),
            () => (topupsFailed += 1),
          );
          continue;
        }
        const image = n % 5 === 0 ? `${media}/flaky-${n}.png` : `${media}/ok.png`;
        const at = Date.now();
        try {
          const res = await fetch(`${api}/api/v1/tools/upscale-image`, {
            method: 'POST',
            headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ image_url: image, upscale_factor: '2' }),
            signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
          });
          const body = (await res.json()) as { data?: { id?: string } };
          submissions.push({
            at,
            status: res.status,
            accountId: account.id,
            ...(body.data?.id === undefined ? {} : { id: body.data.id }),
          });
        } catch {
          submissions.push({ at, status: 0, accountId: account.id });
        }
        await sleep(100);
      }
    };
    const loops = Array.from({ length: concurrency }, () => loop());

    const kills: Kill[] = [];
    const killAndRestart = async (
      what: string,
      victimName: string,
      newLeader: () => Promise<string | undefined>,
    ): Promise<void> => {
      const victim = c.byName(victimName);
      const killedAt = Date.now();
      await victim.kill();
      process.stderr.write(`${seconds(killedAt - started)} s: SIGKILL ${victimName} (${what})\n`);
      const leader = await until(`a new ${what}`, async () => {
        const l = await newLeader();
        return l !== undefined && l !== victimName ? l : undefined;
      });
      const newLeaderAfterMs = Date.now() - killedAt;
      await sleep(Math.max(0, downMs - (Date.now() - killedAt)));
      const restartedAt = Date.now();
      await victim.start();
      // Caught up: a current replica (or the leader) of every stream. Not /healthz: on 2.9 it can stay
      // 503 for an idle consumer ("not current") long after (nats-io/nats-server#4172).
      await until(
        `${victimName} to catch up`,
        async () => ((await caughtUp(jsm, victimName)) ? true : undefined),
        120_000,
      ).catch(async (err: unknown) => {
        throw new Error(`${err instanceof Error ? err.message : String(err)}; its /healthz: ${await victim.health()}`);
      });
      kills.push({
        what,
        node: victimName,
        killedAt,
        newLeader: leader,
        newLeaderAfterMs,
        restartedAt,
        caughtUpAfterMs: Date.now() - restartedAt,
      });
      process.stderr.write(
        `${seconds(Date.now() - started)} s: ${victimName} caught up again; new ${what} ${leader}\n`,
      );
    };

    await sleep(steadyMs);
    await killAndRestart('meta leader', await until('a meta leader', () => c.metaLeader()), () => c.metaLeader());
    await sleep(steadyMs);
    await killAndRestart(
      'ledger stream leader',
      await until('the ledger leader', () => streamLeader(jsm, LEDGER_STREAM)),
      () => streamLeader(jsm, LEDGER_STREAM),
    );
    await sleep(steadyMs);
    stopLoad = true;
    await Promise.all(loops);

    // Settle: every accepted task completed or failed, its refund written.
    const accepted = submissions.filter((s) => s.status === 200 && s.id !== undefined);
    const backlogAtStop = (await jsm.streams.info('MEDIA_JOBS')).state.messages;
    const stoppedAt = Date.now();
    const statusOf = async (s: Submission): Promise<string | undefined> => {
      const account = accounts.find((a) => a.id === s.accountId) as { id: string; key: string };
      const res = await fetch(`${api}/api/v1/tasks/${String(s.id)}`, {
        headers: { authorization: `Bearer ${account.key}` },
      });
      return ((await res.json()) as { data?: { status?: string } }).data?.status;
    };
    // The workers may still have a backlog when the load stops (two image slots against a load
    // generator that outruns them on a busy machine), and jobs the outbox published late run after
    // younger ones. Waiting goes on while tasks settle or the jobs stream shrinks; tasks are declared
    // stuck only when neither has moved for SETTLE_STALL_MS.
    const settled = new Map<string, string>();
    let lastProgress = Date.now();
    let queued = backlogAtStop;
    while (settled.size < accepted.length && Date.now() - lastProgress < SETTLE_STALL_MS) {
      for (const s of accepted) {
        if (settled.has(s.id as string)) continue;
        const st = await statusOf(s).catch(() => undefined);
        if (st !== undefined && st !== 'pending') {
          settled.set(s.id as string, st);
          lastProgress = Date.now();
        }
      }
      const nowQueued = await jsm.streams.info('MEDIA_JOBS').then(
        (i) => i.state.messages,
        () => queued,
      );
      if (nowQueued < queued) lastProgress = Date.now();
      queued = nowQueued;
      if (settled.size < accepted.length) await sleep(1000);
    }
    const drainedAfterMs = Date.now() - stoppedAt;
    const tasks: AuditedTask[] = [];
    for (const s of accepted) {
      const status = settled.get(s.id as string) ?? (await statusOf(s).catch(() => undefined)) ?? 'unknown';
      tasks.push({ id: s.id as string, accountId: s.accountId, status, eventHosts: [], firstClaim: null });
    }
    process.stderr.write(
      `${seconds(Date.now() - started)} s: ${settled.size} of ${accepted.length} tasks settled, ${seconds(drainedAfterMs)} s after the load stopped with ${backlogAtStop} jobs queued\n`,
    );
    await sleep(2000); // a failure's refund follows its status by a moment
    // Every event subject is `media.events.<host>.<task>` (one message each): a task's events by host.
    const eventHosts = new Map<string, string[]>();
    for (const subject of Object.keys(
      (await jsm.streams.info('MEDIA_EVENTS', { subjects_filter: 'media.events.>' })).state.subjects ?? {},
    )) {
      const parsed = hostAndTask(EVENTS_SUBJECT_PREFIX, subject);
      if (parsed !== undefined) eventHosts.set(parsed.taskId, [...(eventHosts.get(parsed.taskId) ?? []), parsed.host]);
    }
    for (const t of tasks) {
      t.eventHosts = eventHosts.get(t.id) ?? [];
      t.firstClaim = await claimHolder(jsm, 'MEDIA_CLAIMS', t.id);
    }
    const ledgers = [];
    for (const a of accounts) {
      const res = await fetch(`${api}/api/v1/balance`, { headers: { authorization: `Bearer ${a.key}` } });
      const apiBalance = ((await res.json()) as { data: { credits: number } }).data.credits;
      const entries = (await store.ledger.entries(a.id, 0, 100_000)).map((e) => e.value);
      ledgers.push({ id: a.id, apiBalance, entries });
    }
    const audit = auditLedger(ledgers, tasks);
    // The first few only: they show whether the stuck ones share a cause.
    for (const t of tasks.filter((x) => x.status !== 'completed' && x.status !== 'failed').slice(0, 5)) {
      process.stderr.write(`${await diagnoseTask(jsm, t.id, children)}\n`);
    }

    // Submissions while a node was down; the clients' own reconnections.
    const whileDown = kills.map((k) => submissions.filter((s) => s.at >= k.killedAt && s.at < k.restartedAt));
    const reconnects = children.map((p) => `${p.name} ${p.reconnections()}`);
    const exitedClients = children
      .filter((p) => p.child.exitCode !== null || p.child.signalCode !== null)
      .map((p) => p.name);
    const statusCounts = new Map<number, number>();
    for (const s of submissions) statusCounts.set(s.status, (statusCounts.get(s.status) ?? 0) + 1);
    const problems = [...audit.problems];
    if (exitedClients.length > 0) problems.push(`client processes exited: ${exitedClients.join(', ')}`);
    for (const [i, w] of whileDown.entries()) {
      if (!w.some((s) => s.status === 200))
        problems.push(`no submission accepted while ${kills[i]?.node} (${kills[i]?.what}) was down`);
    }
    if (submissions.some((s) => s.status >= 500 && s.status !== 503))
      problems.push('a submission failed with a 5xx other than 503');

    const killTable = markdownTable(
      [
        'SIGKILLed',
        'new leader after (s)',
        'down (s)',
        'caught up after restart (s)',
        'submissions while down: accepted / refused',
      ],
      kills.map((k, i) => [
        `${k.node} (${k.what})`,
        seconds(k.newLeaderAfterMs),
        seconds(k.restartedAt - k.killedAt),
        seconds(k.caughtUpAfterMs),
        `${(whileDown[i] ?? []).filter((s) => s.status === 200).length} / ${(whileDown[i] ?? []).filter((s) => s.status !== 200).length}`,
      ]),
    );
    const completed = tasks.filter((t) => t.status === 'completed').length;
    const failed = tasks.filter((t) => t.status === 'failed').length;
    const summary = markdownTable(
      [
        'submissions (HTTP status: count)',
        'tasks accepted',
        'jobs queued when the load stopped / all settled after (s)',
        'completed / failed',
        'with exactly one event, from the first claimer',
        'debits / refunds',
        'top-ups ok / failed',
        'balances = ledger sums',
        'client reconnections (none restarted)',
        'problems',
      ],
      [
        [
          [...statusCounts]
            .map(([s, k]) => `${s === 0 ? `no answer in ${CLIENT_TIMEOUT_MS / 1000} s` : s}: ${k}`)
            .join(', '),
          String(tasks.length),
          `${backlogAtStop} / ${seconds(drainedAfterMs)}`,
          `${completed} / ${failed}`,
          String(tasks.filter((t) => t.eventHosts.length === 1 && t.eventHosts[0] === t.firstClaim).length),
          `${audit.debits} / ${audit.refunds}`,
          `${topupsOk} / ${topupsFailed}`,
          `${ledgers.filter((l) => !audit.problems.some((p) => p.startsWith(l.id))).length} of ${ledgers.length}`,
          reconnects.join(', '),
          String(problems.length),
        ],
      ],
    );
    const machine = `${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC; ${os.cpus().length} cores, load average at start ${loadAtStart}; ${c.version}; Node ${process.version}`;
    const block = [
      killTable,
      '',
      summary,
      '',
      `\`npm run cluster:failover -- --accounts ${accountCount} --concurrency ${concurrency} --down-s ${values['down-s']} --steady-s ${values['steady-s']}\`; ${machine}.`,
    ].join('\n');
    process.stdout.write(`${block}\n`);
    for (const p of problems) process.stdout.write(`problem: ${p}\n`);
    if (values['write-docs'] === true) {
      const doc = await fs.readFile(RECOVER_DOC, 'utf8');
      await fs.writeFile(RECOVER_DOC, replaceMarkedBlock(doc, BLOCK[0], BLOCK[1], block, 'docs/operations/recover.md'));
    }
    await operatorNc.close();
    http.close();
    process.exitCode = problems.length > 0 ? 1 : 0;
  } finally {
    for (const p of children) p.child.kill('SIGKILL');
    await cluster?.stop();
    if (values.keep === true) {
      process.stderr.write(`kept ${dir} (node configurations, nodes' and clients' logs)\n`);
    } else await fs.rm(dir, { recursive: true, force: true });
  }
}

// Exits when done: a connection or server left open by a failure must not keep the script alive.
main().then(
  () => process.exit(),
  (err: unknown) => {
    process.stderr.write(`nats-cluster: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
