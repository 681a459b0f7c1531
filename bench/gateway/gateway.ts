/**
 * One host, the whole service: a throwaway nats-server, `media-worker serve` and `media-worker
 * gateway` (from dist/), an account made with `media-worker accounts create`. Measures
 *
 * - submissions per second through POST /api/v1/generate (music: priced by the worker's quote
 *   service, debited, stored and published; nobody runs them, WORKER_CONCURRENCY music=0) and through
 *   POST /api/v1/tools/upscale-image (the quote fetches and probes a small PNG served locally);
 * - polls: GET /api/v1/tasks/{id} over the submitted tasks and GET /api/v1/balance, closed-loop on
 *   `connections` keep-alive sockets for `duration-ms` (bench/gateway/http-load.ts), side by side in the same
 *   run with the architecture's floor: a bare Fastify route doing one NATS direct get of the task
 *   (bench/gateway/floor-server.ts), in its own process like the gateway. `--repeat` alternations of floor and
 *   gateway; the median round of each is reported, with the ratio gateway / floor.
 *
 * With the limits on: both rate limits check every request (budgets set above the load, so that
 * the figures are the cost of checking, not of refusing), and the account may have `concurrency`
 * quotes in flight (GATEWAY_QUOTES_PER_ACCOUNT).
 *
 * Prints one JSON object. Figures only, no assertions (timings belong here, not in tests).
 *
 *   media-worker bench gateway --help
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, open, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../../src/paths.js';
import { TABLES } from '../blocks.js';
import { describeMachine, machineInfo } from '../common.js';
import { benchCli } from '../harness.js';
import { docsTarget, writeDocsBlock } from '../doc-block.js';
import { closedLoop, type LoadResult } from './http-load.js';
import { started } from './child-output.js';
import { startBenchNats } from './nats-server.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const cli = benchCli({
  name: 'gateway',
  options: {
    submissions: { type: 'string', arg: 'N', help: 'submissions through each POST route', default: '500' },
    concurrency: {
      type: 'string',
      arg: 'C',
      help: 'submissions in flight (and quotes in flight per account)',
      default: '16',
    },
    connections: { type: 'string', arg: 'K', help: 'keep-alive sockets of the polls', default: '16' },
    'duration-ms': { type: 'string', arg: 'MS', help: 'length of each poll measurement', default: '5000' },
    // Another build's CLI for the gateway process only (e.g. main's dist/src/cli.js, to compare before and after).
    'gateway-cli': {
      type: 'string',
      arg: 'PATH',
      help: "another build's dist/src/cli.js for the gateway process (before and after)",
      default: CLI,
    },
  },
  common: { repeat: { default: '3', help: 'alternations of floor and gateway (the median round is reported)' } },
});
const values = cli.values;
const target = await docsTarget('gateway', values);
const machine = describeMachine(machineInfo());
const SUBMISSIONS = positive(values.submissions, 'submissions');
const CONCURRENCY = positive(values.concurrency, 'concurrency');
const CONNECTIONS = positive(values.connections, 'connections');
const DURATION_MS = positive(values['duration-ms'], 'duration-ms');
const ROUNDS = positive(values.repeat, 'repeat');

function positive(raw: string | undefined, name: string): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`Expected --${name} to be a positive integer but received ${JSON.stringify(raw)}`);
  return n;
}

const children: ChildProcess[] = [];
const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-gateway-'));
try {
  const natsUrl = await startBenchNats(dir, children);
  const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(64, 42).png().toBuffer();
  const media = createServer((_req, res) => res.writeHead(200, { 'content-type': 'image/png' }).end(png));
  await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
  const imageUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}/in.png`;
  const env = {
    ...process.env,
    NATS_URL: natsUrl,
    LOG_LEVEL: 'warn',
    MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
    RESULTS_DIR: path.join(dir, 'results'),
    WORKER_HEALTH_PORT: '0',
    WORKER_CONCURRENCY: 'image=0,video=0,lipsync=0,music=0',
    // Nobody runs the jobs, so quotes must price kinds no live worker runs.
    WORKER_QUOTE_UNSERVED: 'price',
    WORKER_QUOTE_CONCURRENCY: '4',
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: '0',
    GATEWAY_QUOTES_PER_ACCOUNT: String(CONCURRENCY),
    GATEWAY_RATE_LIMIT_PER_ACCOUNT: '1000000000',
    GATEWAY_RATE_LIMIT_PER_ADDRESS: '1000000000',
  };
  await promisify(execFile)(process.execPath, [CLI, 'provision'], { env });
  await started(spawnCli(['serve'], { ...env, LOG_LEVEL: 'info' }), /media-worker serving/);
  // The gateway logs every request at info, as deployed, to a file as a log collector would take
  // it: a pipe to this process (busy generating load) would fill and stall the gateway's writes.
  // BENCH_GATEWAY_NODE_OPTIONS: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the gateway.
  const profile = process.env['BENCH_GATEWAY_NODE_OPTIONS'];
  const gatewayLog = await startedLogging(
    [values['gateway-cli'], 'gateway'],
    { ...env, LOG_LEVEL: 'info', ...(profile === undefined ? {} : { NODE_OPTIONS: profile }) },
    path.join(dir, 'gateway.log'),
    /"url":"(http:\/\/[^"]+)","msg":"media-worker gateway listening"/,
  );
  const base = gatewayLog[1]!;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [CLI, 'accounts', 'create', '--name', 'bench', '--credits', String(1e9)],
    { env },
  );
  const key = (JSON.parse(stdout) as { apiKey: string }).apiKey;
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

  const submit = (body: unknown, route: string) => async (): Promise<string> => {
    const res = await fetch(`${base}${route}`, { method: 'POST', headers, body: JSON.stringify(body) });
    const json = (await res.json()) as { data?: { id: string } };
    if (res.status !== 200 || json.data === undefined)
      throw new Error(`submission answered ${res.status}: ${JSON.stringify(json)}`);
    return json.data.id;
  };
  const music = await timed(
    SUBMISSIONS,
    CONCURRENCY,
    submit({ model: 'vendor-v5-generate-music', input: { prompt: 'bench' } }, '/api/v1/generate'),
  );
  const images = await timed(
    Math.max(1, Math.floor(SUBMISSIONS / 5)),
    CONCURRENCY,
    submit({ image_url: imageUrl }, '/api/v1/tools/upscale-image'),
  );
  const ids = music.results;
  const accountId = (JSON.parse(stdout) as { account: { id: string } }).account.id;
  const floorLog = await started(
    spawnNode(path.join(PACKAGE_ROOT, 'dist', 'bench', 'gateway', 'floor-server.js'), {
      ...env,
      FLOOR_STREAM: 'GATEWAY_TASKS',
      FLOOR_SUBJECT_PREFIX: `gateway.tasks.${accountId}.`,
    }),
    /floor listening (http:\/\/\S+)/,
  );
  media.close();
  const load = (url: string, route: (n: number) => string, auth: boolean) =>
    closedLoop({
      url,
      path: route,
      headers: auth ? { authorization: headers.authorization } : {},
      connections: CONNECTIONS,
      warmupMs: 1000,
      durationMs: DURATION_MS,
    });
  const loadAverage = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const rounds: { floor: LoadResult; tasks: LoadResult; balance: LoadResult }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const floor = await load(floorLog[1]!, (n) => `/tasks/${ids[n % ids.length]!}`, false);
    const tasks = await load(base, (n) => `/api/v1/tasks/${ids[n % ids.length]!}`, true);
    const balance = await load(base, () => '/api/v1/balance', true);
    rounds.push({ floor, tasks, balance });
  }
  const median = (pick: (round: (typeof rounds)[number]) => LoadResult): LoadResult => {
    const sorted = rounds.map(pick).sort((a, b) => a.perSecond - b.perSecond);
    return sorted[Math.floor(sorted.length / 2)]!;
  };
  // How the gateway answered: from memory (hit), by reading the store (miss, bypass).
  const viewReads = (await (await fetch(`${base}/metrics`)).text())
    .split('\n')
    .filter((l) => l.startsWith('media_gateway_view_reads_total{'));
  const polls = { floor: median((x) => x.floor), tasks: median((x) => x.tasks), balance: median((x) => x.balance) };
  const ratio = Number((polls.tasks.perSecond / polls.floor.perSecond).toFixed(2));
  const row = (label: string, t: Timed<unknown>): string[] => {
    const s = summary(t);
    return [
      label,
      String(s['count']),
      String(s['perSecond']),
      String(s['p50Ms']),
      String(s['p99Ms']),
      String(s['maxMs']),
    ];
  };
  const pollRow = (label: string, t: LoadResult): string[] => [
    label,
    String(t.count),
    String(t.perSecond),
    String(t.p50Ms),
    String(t.p99Ms),
    String(t.maxMs),
  ];
  const caption =
    `One host (nats-server, serve, gateway), submissions ${CONCURRENCY} at a time; polls closed-loop on ${CONNECTIONS} keep-alive connections for ${DURATION_MS / 1000} s, ` +
    `the median of ${ROUNDS} rounds alternating with the floor (a bare Fastify route doing one NATS direct get, no authentication or limits). ` +
    `Rate limits and the quote cap on (checked on every request, budgets above the load). Gateway polls / floor: ${ratio}; load average before the polls ${loadAverage}:`;
  const rows = [
    row('music submissions (POST /api/v1/generate)', music),
    row('image submissions (POST /api/v1/tools/upscale-image)', images),
    pollRow('floor: bare Fastify route, one NATS direct get', polls.floor),
    pollRow('GET /api/v1/tasks/{id}', polls.tasks),
    pollRow('GET /api/v1/balance', polls.balance),
  ];
  await writeDocsBlock(target, 'gateway', [{ caption, header: TABLES.gateway.header, rows }], machine);
  await cli.done({ tables: [{ caption, header: TABLES.gateway.header, rows }] });
  process.stdout.write(
    `${JSON.stringify(
      {
        machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model ?? 'unknown', node: process.version, loadAverage },
        concurrency: CONCURRENCY,
        connections: CONNECTIONS,
        musicSubmissions: summary(music),
        imageSubmissions: summary(images),
        polls,
        tasksOverFloor: ratio,
        viewReads,
        rounds,
      },
      null,
      2,
    )}\n`,
  );
} finally {
  for (const child of children.reverse()) child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  await rm(dir, { recursive: true, force: true });
}

interface Timed<T> {
  results: T[];
  latenciesMs: number[];
  wallMs: number;
}

/** Runs `n` calls of `task`, `concurrency` at a time, recording each call's latency. */
async function timed<T>(n: number, concurrency: number, task: () => Promise<T>): Promise<Timed<T>> {
  const results: T[] = [];
  const latenciesMs: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next += 1;
        const t0 = performance.now();
        results.push(await task());
        latenciesMs.push(performance.now() - t0);
      }
    }),
  );
  return { results, latenciesMs, wallMs: performance.now() - start };
}

function summary(t: Timed<unknown>): Record<string, number> {
  const sorted = [...t.latenciesMs].sort((a, b) => a - b);
  const at = (q: number): number =>
    Number((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(2));
  return {
    count: sorted.length,
    perSecond: Number(((sorted.length * 1000) / t.wallMs).toFixed(1)),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: at(1),
  };
}

function spawnCli(args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  return spawnNode(CLI, env, args);
}

function spawnNode(script: string, env: NodeJS.ProcessEnv, args: string[] = []): ChildProcess {
  const child = spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return child;
}

/** Starts `node args` writing its output to `logFile`, and waits for `line` there. */
async function startedLogging(
  args: string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
  line: RegExp,
): Promise<RegExpExecArray> {
  const log = await open(logFile, 'w');
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', log.fd, log.fd] });
  children.push(child);
  await log.close();
  for (let i = 0; i < 2400; i++) {
    const match = line.exec(await readFile(logFile, 'utf8'));
    if (match) return match;
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`Expected ${line} in ${logFile}: ${(await readFile(logFile, 'utf8')).slice(-2000)}`);
}
