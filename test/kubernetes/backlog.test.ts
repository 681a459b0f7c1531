/**
 * What KEDA's nats-jetstream scaler reads, from a real nats-server with its monitoring port on:
 * the ScaledObjects of deploy/kubernetes/keda.yaml name an account, stream and consumer; the
 * scaler fetches `/jsz?acc=<account>&consumers=true&config=true` and takes num_pending +
 * num_ack_pending of that consumer. With the worker's own topology (ensureTopology), that figure
 * follows each kind's backlog as jobs are queued, taken (running: still counted) and acknowledged.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_KINDS, type JobKind } from '../../src/jobs/index.js';
import { jobSubject } from '../../src/protocol/index.js';
import { ensureTopology } from '../../src/worker/index.js';
import { workerSettingsFromEnv } from '../../src/worker/settings.js';
import { natsServerBinary } from '../worker/helpers/nats-server.js';
import { readManifests } from './manifests.js';

interface Trigger {
  account: string;
  stream: string;
  consumer: string;
}

/** The scaler's reading of /jsz (KEDA pkg/scalers/nats_jetstream_scaler.go, getMaxMsgLag). */
interface Jsz {
  account_details?: {
    name: string;
    stream_detail?: {
      name: string;
      consumer_detail?: { name: string; num_pending: number; num_ack_pending: number }[];
    }[];
  }[];
}

let dir: string;
let server: ChildProcess;
let monitoring: string;
let nc: NatsConnection;
const triggers = new Map<JobKind, Trigger>();

beforeAll(async () => {
  for (const m of await readManifests()) {
    if (m.kind !== 'ScaledObject') continue;
    const spec = m.spec as { scaleTargetRef: { name: string }; triggers: { metadata: Trigger }[] };
    const kind = spec.scaleTargetRef.name.replace(/^media-worker-/, '') as JobKind;
    triggers.set(kind, spec.triggers[0]!.metadata);
  }
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-keda-'));
  // -m -1: a random monitoring port, written to the ports file with the client port.
  server = spawn(
    natsServerBinary(),
    ['-js', '-sd', path.join(dir, 'store'), '-p', '-1', '-m', '-1', '-a', '127.0.0.1', '--ports_file_dir', dir],
    { stdio: 'ignore' },
  );
  const portsFile = path.join(dir, `${path.basename(natsServerBinary())}_${server.pid}.ports`);
  let ports: { nats: string[]; monitoring?: string[] } | undefined;
  for (let i = 0; i < 400 && ports?.monitoring === undefined; i++) {
    ports = await readFile(portsFile, 'utf8').then(
      (t) => JSON.parse(t) as typeof ports,
      () => undefined,
    );
    if (ports?.monitoring === undefined) await new Promise((r) => setTimeout(r, 25));
  }
  if (ports?.monitoring?.[0] === undefined) throw new Error('nats-server wrote no monitoring address');
  monitoring = ports.monitoring[0];
  nc = await connect({ servers: ports.nats });
  await ensureTopology(await jetstreamManager(nc), workerSettingsFromEnv({}));
});

afterAll(async () => {
  await nc?.close();
  // The server writes its store until it exits: remove the directory after.
  if (server?.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    server.kill('SIGTERM');
    await exited;
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The figure the scaler computes for one trigger; undefined when it would not find the consumer. */
async function lag(t: Trigger): Promise<number | undefined> {
  const res = await fetch(`${monitoring}/jsz?acc=${encodeURIComponent(t.account)}&consumers=true&config=true`);
  const jsz = (await res.json()) as Jsz;
  const consumer = jsz.account_details
    ?.find((a) => a.name === t.account)
    ?.stream_detail?.find((s) => s.name === t.stream)
    ?.consumer_detail?.find((c) => c.name === t.consumer);
  return consumer === undefined ? undefined : consumer.num_pending + consumer.num_ack_pending;
}

async function lags(): Promise<Record<string, number | undefined>> {
  const out: Record<string, number | undefined> = {};
  for (const kind of JOB_KINDS) out[kind] = await lag(triggers.get(kind)!);
  return out;
}

describe('the backlog KEDA reads from /jsz', () => {
  it("finds every kind's consumer, and follows each kind's jobs as they are queued, taken and finished", async () => {
    expect([...triggers.keys()].sort()).toEqual([...JOB_KINDS].sort());
    expect(await lags()).toEqual({ image: 0, video: 0, lipsync: 0, music: 0, 'music-video': 0 });

    const js = jetstream(nc);
    const publish = (kind: JobKind, model: string, n: number): Promise<unknown> =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          js.publish(jobSubject(kind, model), JSON.stringify({ id: `${kind}-${i}` })),
        ),
      );
    await publish('image', 'vendor-image-upscale', 3);
    await publish('video', 'vendor-video-upscale', 2);
    await publish('lipsync', 'vendor-lipsync-2', 1);
    expect(await lags()).toEqual({ image: 3, video: 2, lipsync: 1, music: 0, 'music-video': 0 });

    // A worker takes an image job: still counted while it runs (ack pending), so its pod is kept.
    const images = await js.consumers.get(triggers.get('image')!.stream, triggers.get('image')!.consumer);
    const running = await images.next({ expires: 2000 });
    expect(running).not.toBeNull();
    expect(await lags()).toEqual({ image: 3, video: 2, lipsync: 1, music: 0, 'music-video': 0 });
    const detail = await (
      await jetstreamManager(nc)
    ).consumers.info(triggers.get('image')!.stream, triggers.get('image')!.consumer);
    expect([detail.num_pending, detail.num_ack_pending]).toEqual([2, 1]);

    // Finished: gone from the work queue and from the figure; the other kinds are untouched.
    await running!.ackAck();
    expect(await lags()).toEqual({ image: 2, video: 2, lipsync: 1, music: 0, 'music-video': 0 });

    // The video backlog drains to zero: the scaler may then scale that Deployment to zero.
    const videos = await js.consumers.get(triggers.get('video')!.stream, triggers.get('video')!.consumer);
    for (let i = 0; i < 2; i++) await (await videos.next({ expires: 2000 }))!.ackAck();
    expect(await lags()).toEqual({ image: 2, video: 0, lipsync: 1, music: 0, 'music-video': 0 });
  });
});
