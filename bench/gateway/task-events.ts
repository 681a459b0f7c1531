/**
 * What 1,000 idle live-event streams cost one gateway (GET /api/v1/tasks/{id}/events), side by side
 * in the same run with 1,000 polls a second of GET /api/v1/tasks/{id}: the gateway process's RSS
 * growth and its CPU share (CPU seconds / wall seconds, from /proc) over an idle window. One host:
 * a throwaway nats-server, `media-worker serve` (pricing only: nobody runs the jobs, so the tasks
 * stay pending and their streams idle, heartbeats aside) and `media-worker gateway` from dist/.
 *
 * Prints one JSON object. Figures only (the goal, under 100 MB and 5 % of a core for 1,000 streams,
 * is compared by the reader: docs/benchmarks.md).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { started as startedChild } from './child-output.js';
import { intOption } from '../common.js';
import { cpuSeconds } from '../cpu-time.js';
import { benchCli } from '../harness.js';
import { startBenchNats } from './nats-server.js';

const cli = benchCli({
  name: 'task-events',
  notes:
    'The goal (under 100 MB and 5 % of a core for 1,000 idle streams) is compared by the reader: docs/benchmarks.md.',
  options: {
    streams: { type: 'string', arg: 'N', help: 'open idle event streams', default: '1000' },
    tasks: { type: 'string', arg: 'T', help: 'pending tasks the streams follow, N/T streams each', default: '100' },
    'polls-per-second': {
      type: 'string',
      arg: 'P',
      help: "the polling side's rate of GET /api/v1/tasks/{id}",
      default: '1000',
    },
    'idle-ms': {
      type: 'string',
      arg: 'MS',
      help: 'each measuring window (two heartbeats by default)',
      default: '30000',
    },
    'heartbeat-ms': {
      type: 'string',
      arg: 'MS',
      help: 'GATEWAY_EVENT_HEARTBEAT_MS (the shipped default)',
      default: '15000',
    },
  },
});

function options(): { streams: number; tasks: number; pollsPerSecond: number; idleMs: number; heartbeatMs: number } {
  const values = cli.values;
  const positive = (raw: string, name: string): number => intOption(name, raw, 1)!;
  return {
    streams: positive(values.streams, 'streams'),
    tasks: positive(values.tasks, 'tasks'),
    pollsPerSecond: positive(values['polls-per-second'], 'polls-per-second'),
    idleMs: positive(values['idle-ms'], 'idle-ms'),
    heartbeatMs: positive(values['heartbeat-ms'], 'heartbeat-ms'),
  };
}

const opts = options();
const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const children: ChildProcess[] = [];
const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-task-events-'));
const sockets: http.ClientRequest[] = [];
try {
  const env = {
    ...process.env,
    NATS_URL: await startBenchNats(dir, children),
    LOG_LEVEL: 'warn',
    RESULTS_DIR: path.join(dir, 'results'),
    WORKER_HEALTH_PORT: '0',
    WORKER_CONCURRENCY: 'image=0,video=0,lipsync=0,music=0',
    WORKER_QUOTE_UNSERVED: 'price',
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: '0',
    GATEWAY_RATE_LIMIT_PER_ACCOUNT: '1000000000',
    GATEWAY_RATE_LIMIT_PER_ADDRESS: '1000000000',
    GATEWAY_EVENT_STREAMS: String(opts.streams),
    GATEWAY_EVENT_STREAMS_PER_ACCOUNT: String(opts.streams),
    GATEWAY_EVENT_HEARTBEAT_MS: String(opts.heartbeatMs),
  };
  await promisify(execFile)(process.execPath, [CLI, 'provision'], { env });
  await started(
    spawn(process.execPath, [CLI, 'serve'], { env: { ...env, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] }),
    /media-worker serving/,
  );
  const gateway = spawn(process.execPath, [CLI, 'gateway'], {
    env: { ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const base = (await started(gateway, /"url":"(http:\/\/[^"]+)","msg":"media-worker gateway listening"/))[1]!;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [CLI, 'accounts', 'create', '--name', 'bench', '--credits', String(1e9)],
    { env },
  );
  const key = (JSON.parse(stdout) as { apiKey: string }).apiKey;
  const auth = { authorization: `Bearer ${key}` };

  const ids: string[] = [];
  for (let i = 0; i < opts.tasks; i++) {
    const res = await fetch(`${base}/api/v1/generate`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'vendor-v5-generate-music', input: { prompt: `bench ${i}` } }),
    });
    const json = (await res.json()) as { data?: { id: string } };
    if (json.data === undefined) throw new Error(`submission answered ${res.status}: ${JSON.stringify(json)}`);
    ids.push(json.data.id);
  }
  const pid = gateway.pid!;
  const window = async (): Promise<{ cpuShare: number; rssMb: number }> => {
    const [cpu0, t0] = [cpuSeconds(pid), performance.now()];
    await sleep(opts.idleMs);
    const share = (cpuSeconds(pid) - cpu0) / ((performance.now() - t0) / 1000);
    return { cpuShare: round(share * 100, 2), rssMb: rssMb(pid) };
  };

  await sleep(2000);
  const idle = await window();

  // Each stream on its own connection, as each client would hold one.
  let opened = 0;
  await Promise.all(
    Array.from(
      { length: opts.streams },
      (_, n) =>
        new Promise<void>((resolve, reject) => {
          const req = http.get(
            `${base}/api/v1/tasks/${ids[n % ids.length]!}/events`,
            { headers: auth, agent: false },
            (res) => {
              if (res.statusCode !== 200) reject(new Error(`stream ${n} answered ${res.statusCode}`));
              opened += 1;
              res.resume();
              resolve();
            },
          );
          req.on('error', reject);
          sockets.push(req);
        }),
    ),
  );
  await sleep(2000);
  const streams = await window();
  for (const req of sockets) req.destroy();
  await sleep(3000);
  const afterStreams = { rssMb: rssMb(pid) };

  // Open loop: P requests a second spread over the window, on keep-alive connections.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  let answered = 0;
  let failed = 0;
  const pollTimer = setInterval(() => {
    for (let i = 0; i < opts.pollsPerSecond / 100; i++) {
      http
        .get(`${base}/api/v1/tasks/${ids[(answered + failed + i) % ids.length]!}`, { headers: auth, agent }, (res) => {
          if (res.statusCode === 200) answered += 1;
          else failed += 1;
          res.resume();
        })
        .on('error', () => (failed += 1));
    }
  }, 10);
  await sleep(1000);
  const [answered0, polls] = [answered, await window()];
  clearInterval(pollTimer);
  agent.destroy();
  const pollRate = round((answered - answered0) / (opts.idleMs / 1000), 1);

  const result = {
    machine: {
      cpus: os.cpus().length,
      cpu: os.cpus()[0]?.model ?? 'unknown',
      node: process.version,
      loadAverage: os.loadavg().map((l) => round(l, 2)),
    },
    settings: opts,
    gatewayIdle: idle,
    streams: {
      open: opened,
      ...streams,
      rssDeltaMb: round(streams.rssMb - idle.rssMb, 1),
      cpuShareOverIdle: round(streams.cpuShare - idle.cpuShare, 2),
    },
    afterStreamsClosed: afterStreams,
    polls: {
      answeredPerSecond: pollRate,
      failed,
      ...polls,
      rssDeltaMb: round(polls.rssMb - afterStreams.rssMb, 1),
      cpuShareOverIdle: round(polls.cpuShare - idle.cpuShare, 2),
    },
  };
  const header = ['30 s window', 'RSS change MB', 'CPU over the idle gateway, % of a core'];
  const rows = [
    [
      `${result.streams.open} open idle streams`,
      String(result.streams.rssDeltaMb),
      String(result.streams.cpuShareOverIdle),
    ],
    [
      `${opts.pollsPerSecond} polls/s (${pollRate} answered)`,
      String(result.polls.rssDeltaMb),
      String(result.polls.cpuShareOverIdle),
    ],
  ];
  console.log(JSON.stringify(result, null, 2));
  await cli.done({ tables: [{ header, rows }], data: result });
} finally {
  for (const req of sockets) req.destroy();
  for (const child of children.reverse()) child.kill('SIGTERM');
  await sleep(500);
  await rm(dir, { recursive: true, force: true });
}

function rssMb(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return round(kb / 1024, 1);
}

function round(n: number, digits: number): number {
  return Number(n.toFixed(digits));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function started(child: ChildProcess, line: RegExp): Promise<RegExpExecArray> {
  children.push(child);
  return startedChild(child, line);
}
