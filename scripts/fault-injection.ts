/**
 * The kill-and-restart suite against real `media-worker serve` processes: anyone can rerun it and compare.
 *
 *   npm run chaos -- [--tasks 40] [--kills 12] [--workers 2] [--seed 1] [--json] [--keep]
 *
 * Starts its own nats-server (JetStream, free port, store in a temp directory) and a local http
 * server for the inputs (each image trickles out over about 1.5 s, so jobs spend time mid-job),
 * then `--workers` serve processes (hosts `chaos0`, `chaos1`, ..., every kind at its shipped
 * concurrency, claims leased for the ack wait) sharing one temp directory and one results directory. It
 * publishes `--tasks` image jobs (about 1 in 10 naming a missing input: a permanent failure with
 * a refund; about 1 in 10 published twice), SIGKILLs a random worker's whole process group
 * `--kills` times at random moments (restarting it half a second later) and restarts nats-server
 * once. It waits until every task has its event, or until the queue has held nothing for 15 s (at
 * most 10 minutes: a task late on a busy machine is not counted lost while its job is still queued
 * or running), stops
 * the workers with SIGTERM and counts: events per task (exactly one each), duplicates, results
 * that match (a completed task's file exists with the x2 size), refunds, the longest wait from
 * publish to event and from the last kill to the last event, and what is left in the temp
 * directory (anything at all: job directories, readiness checks' renders) and the results directory
 * (partial files), besides the job directories the kills left (reclaimed by the sweeps of the
 * restarted workers). A task without an event is reported with its claim and the jobs consumer's state. The last line printed is one JSON verdict; exit status 1 when a count is
 * wrong, and then (or with --keep) the run's folder stays, the workers' logs in it. A completed
 * task counts as correct only when its event's size and sha256 are the stored file's. `--store s3`
 * puts the results in a bucket (s3rver in its own process) and deletes the workers' results and
 * temp folders before reading each completed task's file back from the bucket.
 * `--aimed stored,multipart` adds kills aimed by MEDIA_WORKER_TEST_KILL_AT (src/worker/kill-point.ts)
 * before the timed ones: the first worker runs alone, started armed at each point in turn; it dies
 * there by itself and is restarted, and the others start once it holds the job of the last point.
 * `stored`: a result is stored and confirmed, no event yet. `multipart` (--store s3 only): a part is
 * stored, the upload neither completed nor aborted; the task the armed worker reaches then (the
 * queue's order: task number = the point's place in the list) is a large one, 480x360 of noise
 * upscaled x4 (the x4 network runs for either factor: a quarter of the x2 input's work for the same
 * output), whose 1920x1440 result (about 5.8 MB) goes up in the 5 MiB parts the workers are given. A point not
 * reached within 10 minutes counts as missed and fails the run.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync } from 'node:fs';
import fs from 'node:fs/promises';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import sharp from 'sharp';
import { natsServerBin } from '../bench/gateway/nats-server.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../src/paths.js';
import { claimHolder, terminalEventSchema, type TerminalEvent } from '../src/protocol/index.js';
import { seededRandom } from '../src/seeded-random.js';
import { sleep } from '../src/sleep.js';
import { startObjectStore } from './chaos/object-store.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
/** How long the queue must hold nothing before a task without an event counts as lost. */
const IDLE_MS = 15_000;
/** The longest wait for the events after the last kill, however busy the machine. */
const MAX_WAIT_MS = 600_000;

interface NatsProcess {
  url: string;
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

async function startNats(dir: string): Promise<NatsProcess> {
  const bin = natsServerBin();
  let port = -1;
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const proc = spawn(
      bin,
      ['-p', String(port), '-a', '127.0.0.1', '-js', '-sd', path.join(dir, 'store'), '--ports_file_dir', dir],
      { stdio: 'ignore' },
    );
    child = proc;
    let failed: Error | undefined;
    proc.once('error', (err) => (failed = err));
    const portsFile = path.join(dir, `${path.basename(bin)}_${proc.pid}.ports`);
    for (let i = 0; i < 400 && failed === undefined; i += 1) {
      const text = await fs.readFile(portsFile, 'utf8').catch(() => '');
      const url = text === '' ? undefined : (JSON.parse(text) as { nats: string[] }).nats[0];
      if (url !== undefined) {
        port = Number(new URL(url).port);
        return;
      }
      await sleep(25);
    }
    throw new Error(`nats-server (${bin}) did not start${failed === undefined ? '' : `: ${failed.message}`}`);
  };
  const stop = async (): Promise<void> => {
    const proc = child;
    if (proc === undefined || proc.exitCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    async restart(downMs) {
      await stop();
      await sleep(downMs);
      await start();
    },
    stop,
  };
}

interface Worker {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
  /** The kill point it was started armed with (MEDIA_WORKER_TEST_KILL_AT). */
  killAt: string | undefined;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      tasks: { type: 'string', default: '40' },
      kills: { type: 'string', default: '12' },
      workers: { type: 'string', default: '2' },
      seed: { type: 'string', default: '1' },
      json: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      // s3: results go to a bucket (s3rver, its own process); afterwards the workers' folders are deleted and each result is read back from it.
      store: { type: 'string', default: 'local' },
      aimed: { type: 'string', default: '' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) {
    process.stdout.write(
      'Usage: node dist/scripts/fault-injection.js [--tasks 40] [--kills 12] [--workers 2] [--seed 1] [--store local|s3] [--aimed stored,multipart] [--json] [--keep]\n',
    );
    return;
  }
  const tasks = Number(values.tasks);
  const kills = Number(values.kills);
  const workerCount = Number(values.workers);
  const aimed = values.aimed === '' ? [] : values.aimed.split(',');
  for (const point of aimed)
    if (!(point === 'stored' || (point === 'multipart' && values.store === 's3')))
      throw new Error(`--aimed takes stored, and multipart with --store s3; got ${JSON.stringify(point)}`);
  const rand = seededRandom(Number(values.seed));
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-faults-'));
  const tmp = path.join(dir, 'tmp');
  const results = path.join(dir, 'results');
  const logs = path.join(dir, 'logs');
  await fs.mkdir(tmp);
  await fs.mkdir(logs);

  // Inputs: an 80x53 PNG trickled out in 10 pieces over 1.5 s.
  const png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(80, 53).png().toBuffer();
  // Noise upscaled x4 keeps its grain (some 2 bytes a pixel as PNG): a multipart upload in 5 MiB parts.
  const large = await sharp(randomBytes(480 * 360 * 3), { raw: { width: 480, height: 360, channels: 3 } })
    .png()
    .toBuffer();
  const open = new Set<ServerResponse>();
  const http = createServer((req, res) => {
    const body = (req.url ?? '').startsWith('/img-') ? png : (req.url ?? '').startsWith('/big-') ? large : undefined;
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    open.add(res);
    res.once('close', () => open.delete(res));
    res.writeHead(200, { 'content-length': body.length });
    const piece = Math.ceil(body.length / 10);
    let sent = 0;
    const timer = setInterval(() => {
      if (res.destroyed) return clearInterval(timer);
      res.write(body.subarray(sent, sent + piece));
      sent += piece;
      if (sent >= body.length) {
        clearInterval(timer);
        res.end();
      }
    }, 150);
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const nats = await startNats(dir);
  const bucket = values.store === 's3' ? await startObjectStore(path.join(dir, 's3'), 'chaos') : undefined;

  const env = {
    ...process.env,
    NATS_URL: nats.url,
    LOG_LEVEL: 'info',
    MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
    MEDIA_WORKER_TMP_DIR: tmp,
    RESULTS_DIR: results,
    RESULTS_BASE_URL: 'https://cdn.example.test/results',
    // Every kind as shipped (no WORKER_CONCURRENCY): their readiness checks run, and are killed, too.
    WORKER_ACK_WAIT_MS: '3000',
    // A host killed for good loses its tasks after the lease (docs/claims-leases.md): here the ack wait.
    WORKER_CLAIM_LEASE_MS: '3000',
    WORKER_HEARTBEAT_MS: '500',
    WORKER_PULL_EXPIRES_MS: '1000',
    WORKER_NAK_DELAYS_MS: '200',
    // Kills are frequent here: enough deliveries that none runs out of them.
    WORKER_MAX_DELIVER: '20',
    WORKER_LEFTOVER_SWEEP_INTERVAL_MS: '2000',
    WORKER_HEALTH_PORT: '0',
    WORKER_HEALTH_HOST: '127.0.0.1',
    ...bucket?.env,
    // The smallest parts S3 takes: the large task's result goes up in two.
    ...(bucket === undefined ? {} : { RESULTS_S3_PART_MIB: '5' }),
  };
  const workers: Worker[] = [];
  const startWorker = (name: string, killAt?: string): Worker => {
    // Its own process group, so a kill takes ffmpeg and every other child with it.
    const log = openSync(path.join(logs, `${name}.log`), 'a');
    // One host per worker (as in a fleet): a task whose host was killed is taken over by another.
    const host = name.replace(/^fault-worker-/, 'chaos');
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: {
        ...env,
        NATS_CONNECTION_NAME: name,
        WORKER_HOST_ID: host,
        ...(killAt === undefined ? {} : { MEDIA_WORKER_TEST_KILL_AT: killAt }),
      },
      stdio: ['ignore', log, log],
      detached: true,
    });
    closeSync(log);
    const w = { name, child, exited: new Promise<void>((r) => child.once('exit', () => r())), killAt };
    return w;
  };
  // The operator's step: streams and consumers exist before any worker binds to them.
  execFileSync(process.execPath, [CLI, 'provision'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  // With aimed kills the first worker starts alone, armed; the others once it holds the last point's job.
  let armed = 0;
  const nextPoint = (): string | undefined => aimed[armed++];
  workers.push(startWorker('fault-worker-0', nextPoint()));
  const startOthers = (): void => {
    for (let i = workers.length; i < workerCount; i += 1) workers.push(startWorker(`fault-worker-${i}`));
  };
  if (aimed.length === 0) startOthers();
  await sleep(4000);

  const nc: NatsConnection = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 200 });
  const jsm = await jetstreamManager(nc);
  const js = jsm.jetstream();
  const ids: string[] = [];
  const bad = new Set<string>();
  const bigTasks = new Set<string>();
  // The one large task: the one the worker armed at `multipart` reaches (each earlier point took one task).
  const bigIndex = aimed.indexOf('multipart');
  let duplicatesPublished = 0;
  const publishedAt = new Map<string, number>();
  const publish = async (id: string, url: string, factor = '2'): Promise<void> => {
    const h = natsHeaders();
    h.set('Nats-Msg-Id', id);
    const body = { id, model: 'vendor-image-upscale', input: { image_url: url, upscale_factor: factor }, credits: 20 };
    for (;;) {
      try {
        await js.publish('media.jobs.image.vendor-image-upscale', JSON.stringify(body), { headers: h, timeout: 5000 });
        return;
      } catch {
        await sleep(200); // the server is restarting: publish again (the msg id makes it once)
      }
    }
  };
  for (let i = 0; i < tasks; i += 1) {
    const id = `fault-${String(i).padStart(3, '0')}`;
    ids.push(id);
    publishedAt.set(id, Date.now());
    const missing = rand() < 0.1 && i !== bigIndex;
    if (missing) bad.add(id);
    const big = i === bigIndex;
    if (big) bigTasks.add(id);
    const url = missing ? `${base}/missing-${id}.png` : `${base}/${big ? 'big' : 'img'}-${id}.png`;
    await publish(id, url, big ? '4' : '2');
    if (rand() < 0.1) {
      await publish(id, url, big ? '4' : '2');
      duplicatesPublished += 1;
    }
  }

  // Aimed kills first, while the queue is full: the armed first worker dies at its point by itself.
  const aimedLanded: Record<string, number> = {};
  let aimedMissed = 0;
  while (workers[0]?.killAt !== undefined) {
    const w = workers[0];
    if (armed === aimed.length) {
      // The last point: the others start once this worker holds its job (the large one for `multipart`).
      const pid = w.child.pid as number;
      const task = w.killAt === 'multipart' ? `-${ids[bigIndex]}-` : '';
      while (w.child.exitCode === null && w.child.signalCode === null) {
        if ((await fs.readdir(tmp)).some((n) => n.includes(`-p${pid}s`) && n.includes(task))) break;
        await sleep(250);
      }
      startOthers();
    }
    const landed = await Promise.race([w.exited.then(() => true), sleep(600_000).then(() => false)]);
    try {
      // The whole group, as a host lost would take it (and the worker itself when it missed its point).
      process.kill(-(w.child.pid as number), 'SIGKILL');
    } catch {
      // Already gone.
    }
    await w.exited;
    if (landed && w.child.signalCode === 'SIGKILL') aimedLanded[w.killAt!] = (aimedLanded[w.killAt!] ?? 0) + 1;
    else aimedMissed += 1;
    await sleep(500);
    workers[0] = startWorker(w.name, nextPoint());
  }

  // Kills at random moments, one nats-server restart half-way.
  let midJob = 0;
  let orphaned = 0;
  let natsRestarts = 0;
  let lastKillAt = Date.now();
  for (let k = 0; k < kills; k += 1) {
    await sleep(500 + rand() * 1500);
    const index = Math.floor(rand() * workers.length);
    const victim = workers[index] as Worker;
    const pid = victim.child.pid as number;
    const busy = (await fs.readdir(tmp)).some((n) => n.includes(`-p${pid}s`));
    if (busy) midJob += 1;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
    await victim.exited;
    // What the kill left behind: job directories no cleanup of the dead process will remove.
    orphaned += (await fs.readdir(tmp)).filter((n) => n.includes(`-p${pid}s`)).length;
    lastKillAt = Date.now();
    await sleep(500);
    workers[index] = startWorker(victim.name);
    if (k === Math.floor(kills / 2)) {
      await nats.restart(1000);
      natsRestarts += 1;
    }
  }

  // Each event with the time the server stored it, for the longest wait from publish to event.
  const storedAt = new Map<string, number>();
  const eventsOf = async (): Promise<TerminalEvent[]> => {
    const info = await jsm.streams.info('MEDIA_EVENTS');
    const out: TerminalEvent[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq += 1) {
      const stored = await jsm.streams.getMessage('MEDIA_EVENTS', { seq }).catch(() => null);
      if (!stored) continue;
      const event = terminalEventSchema.parse(stored.json());
      if (!storedAt.has(event.id)) storedAt.set(event.id, stored.time.getTime());
      out.push(event);
    }
    return out;
  };
  // Until every task has its event, or the queue has held nothing for IDLE_MS: a task still queued or
  // running on a slow or busy machine is late, not lost; one missing while nothing is left to run is lost.
  let events: TerminalEvent[] = [];
  let idleSince: number | undefined;
  const deadline = Date.now() + MAX_WAIT_MS;
  while (Date.now() < deadline) {
    events = await eventsOf().catch(() => events);
    if (new Set(events.map((e) => e.id)).size >= tasks) break;
    const queued = await queuedJobs(jsm).catch(() => 1);
    idleSince = queued > 0 ? undefined : (idleSince ?? Date.now());
    if (idleSince !== undefined && Date.now() - idleSince >= IDLE_MS) break;
    await sleep(500);
  }

  // A task without an event: where it stands on the server, for the cause.
  const lost = ids.filter((id) => !events.some((e) => e.id === id));
  const lostState = [];
  for (const id of lost)
    lostState.push({ id, ...(await serverStateOf(jsm, id).catch((err: unknown) => ({ error: String(err) }))) });

  // Graceful stop, then what is left behind.
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited));
  // Anything at all: job directories, and what readiness checks and warm-ups put there.
  const leftoverDirs = await fs.readdir(tmp);
  const partials: string[] = [];
  for (const kind of await fs.readdir(results).catch(() => [] as string[])) {
    for (const task of await fs.readdir(path.join(results, kind))) {
      for (const f of await fs.readdir(path.join(results, kind, task))) if (f.includes('.partial-')) partials.push(f);
    }
  }
  // On a bucket, nothing of a completed task may depend on the hosts: their folders go first.
  if (bucket !== undefined)
    await Promise.all([fs.rm(results, { recursive: true, force: true }), fs.rm(tmp, { recursive: true, force: true })]);
  const perTask = new Map<string, TerminalEvent[]>();
  for (const e of events) perTask.set(e.id, [...(perTask.get(e.id) ?? []), e]);
  let correct = 0;
  for (const id of ids) {
    const [e] = perTask.get(id) ?? [];
    if (e === undefined) continue;
    if (bad.has(id)) {
      if (e.status === 'failed' && e.refund === true) correct += 1;
      continue;
    }
    const file =
      bucket === undefined
        ? await fs.readFile(path.join(results, 'image', id, 'output.png')).catch(() => undefined)
        : await storedObject(bucket.endpoint, `results/image/${id}/output.png`);
    const meta =
      file === undefined
        ? undefined
        : await sharp(file)
            .metadata()
            .catch(() => undefined);
    // The event's size and sha256 are those of the stored file.
    const listed =
      e.files?.length === 1 &&
      e.files[0]?.size === file?.length &&
      e.files[0]?.sha256 === (file === undefined ? '' : createHash('sha256').update(file).digest('hex'));
    const [width, height] = bigTasks.has(id) ? [1920, 1440] : [160, 106];
    if (e.status === 'completed' && listed && meta?.width === width && meta.height === height) correct += 1;
  }
  const report = {
    tasks,
    workers: workerCount,
    kills,
    midJobKills: midJob,
    aimedKills: aimedLanded,
    aimedMissed,
    largeTasks: bigTasks.size,
    natsRestarts,
    duplicatesPublished,
    events: events.length,
    tasksWithOneEvent: ids.filter((id) => perTask.get(id)?.length === 1).length,
    tasksWithoutEvent: ids.filter((id) => !perTask.has(id)).length,
    tasksWithSeveralEvents: ids.filter((id) => (perTask.get(id)?.length ?? 0) > 1).length,
    completed: events.filter((e) => e.status === 'completed').length,
    refunded: events.filter((e) => e.status === 'failed').length,
    expectedRefunds: bad.size,
    correctOutcomes: correct,
    redeliveredCompletions: events.filter((e) => e.status === 'completed' && e.attempt > 1).length,
    jobDirsLeftByKills: orphaned,
    leftoverJobDirs: leftoverDirs.length,
    leftoverPartialResults: partials.length,
    longestSecondsToEvent: Math.max(
      0,
      ...ids.map((id) => ((storedAt.get(id) ?? Date.now()) - (publishedAt.get(id) ?? 0)) / 1000),
    ),
    // Server times of the events against this machine's clock (one machine): how long the last kill held a task up.
    secondsFromLastKillToLastEvent: Math.max(
      0,
      (Math.max(0, ...ids.map((id) => storedAt.get(id) ?? Date.now())) - lastKillAt) / 1000,
    ),
    leftoverTempEntries: leftoverDirs.slice(0, 20),
    lost: lostState,
  };
  await nc.close();
  await nats.stop();
  bucket?.stop();
  for (const res of open) res.destroy();
  http.close();
  const ok =
    report.tasksWithOneEvent === tasks &&
    report.correctOutcomes === tasks &&
    report.leftoverJobDirs === 0 &&
    report.leftoverPartialResults === 0 &&
    aimedMissed === 0;
  // The workers' logs stay for a failed run (or with --keep): they tell why.
  if (ok && values.keep !== true) await fs.rm(dir, { recursive: true, force: true });

  if (values.json === true) process.stdout.write(`${JSON.stringify(report)}\n`);
  else {
    process.stdout.write('| measure | value |\n|---|---|\n');
    for (const [k, v] of Object.entries(report))
      process.stdout.write(`| ${k} | ${typeof v === 'object' ? JSON.stringify(v) : v} |\n`);
  }
  // The last line is always one JSON verdict, as the partition suite's.
  const verdict = {
    ok,
    tasks,
    events: report.events,
    lost: report.tasksWithoutEvent,
    duplicates: report.tasksWithSeveralEvents,
    wrong: tasks - report.tasksWithoutEvent - report.correctOutcomes,
    refunds: report.refunded,
    expectedRefunds: report.expectedRefunds,
    kills,
    midJobKills: midJob,
    ...(aimed.length > 0 ? { aimedKills: aimedLanded, aimedMissed } : {}),
    leftoverJobDirs: report.leftoverJobDirs,
    leftoverPartialResults: report.leftoverPartialResults,
    longestSecondsToEvent: Number(report.longestSecondsToEvent.toFixed(1)),
    secondsFromLastKillToLastEvent: Number(report.secondsFromLastKillToLastEvent.toFixed(1)),
    ...(lostState.length > 0 ? { lostTasks: lostState } : {}),
    ...(ok && values.keep !== true ? {} : { kept: dir }),
  };
  process.stdout.write(`${JSON.stringify(verdict)}\n`);
  if (!ok) process.exitCode = 1;
}

/** An object as the bucket holds it (s3rver checks the access key only), or undefined. */
async function storedObject(endpoint: string, key: string): Promise<Buffer | undefined> {
  const { S3Client, GetObjectCommand } = await import('@aws-sdk/client-s3');
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  try {
    const got = await client.send(new GetObjectCommand({ Bucket: 'chaos', Key: key }));
    return Buffer.from(await got.Body!.transformToByteArray());
  } catch {
    return undefined;
  } finally {
    client.destroy();
  }
}

/** Image jobs the server still holds for a worker: waiting, or delivered and not yet acknowledged. */
async function queuedJobs(jsm: JetStreamManager): Promise<number> {
  const info = await jsm.consumers.info('MEDIA_JOBS', 'media-worker-image');
  return info.num_pending + info.num_ack_pending;
}

/** The host that first claimed a task, and the jobs consumer's state, as the server holds them. */
async function serverStateOf(jsm: JetStreamManager, id: string): Promise<Record<string, unknown>> {
  const consumers = [];
  for await (const c of jsm.consumers.list('MEDIA_JOBS'))
    consumers.push({
      name: c.name,
      pending: c.num_pending,
      ackPending: c.num_ack_pending,
      redelivered: c.num_redelivered,
      ackFloor: c.ack_floor.stream_seq,
      delivered: c.delivered.stream_seq,
    });
  return { claimedBy: await claimHolder(jsm, 'MEDIA_CLAIMS', id), consumers };
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
