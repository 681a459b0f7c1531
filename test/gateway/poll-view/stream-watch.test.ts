/**
 * The poll view's watch of the task records, as the shipped gateway user, resumes when its consumer
 * is lost (issue 38, item 3). A watch's ordered consumer has one replica: its node isolated by a
 * partition, or the consumer removed, the watch misses heartbeats, and the client then asks for the
 * consumer's info before it pulls again or re-creates it. The shipped gateway user could not do that
 * on the task and key records, so such a watch never resumed: `npm run chaos:partitions` found
 * "Publish Violation ... $JS.API.CONSUMER.INFO.GATEWAY_TASKS.view_..." in the server logs again and
 * again to the end of the run, while that gateway's polls read the store. Here the consumer is
 * removed under the watch and the next task record must reach it.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureStoreStreams } from '../../../src/gateway/store/streams.js';
import { watchStream } from '../../../src/gateway/poll-view/stream-watch.js';
import { sleep } from '../../../src/sleep.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';

/** Far above the 1-2 s it takes (two missed heartbeats, then a new consumer). */
const DEADLINE_MS = 15_000;

let dir: string;
let nats: RoleNats;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-view-lost-'));
  nats = await startRoleNats(dir);
  const operator = await nats.connectAs('operator');
  connections.push(operator);
  await ensureStoreStreams(await jetstreamManager(operator), 'GATEWAY');
}, 60_000);

afterAll(async () => {
  for (const nc of connections) await nc.close();
  await nats?.close();
  if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true });
});

/** Waits up to DEADLINE_MS for `done`; says how long it took. */
async function within(done: () => boolean): Promise<string> {
  const from = Date.now();
  while (!done() && Date.now() - from < DEADLINE_MS) await sleep(100);
  return done() ? `${((Date.now() - from) / 1000).toFixed(1)} s` : 'never';
}

it("the task records' watch resumes after its consumer is lost", async () => {
  const [operator] = connections;
  const gateway = await nats.connectAs('gateway');
  connections.push(gateway);
  const seen: string[] = [];
  const errors: unknown[] = [];
  const watch = await watchStream(gateway, jetstream(gateway), {
    stream: 'GATEWAY_TASKS',
    filter: 'gateway.tasks.*.*',
    onMessage: (subject) => void seen.push(subject),
    onInterrupt: () => undefined,
    onError: (err) => void errors.push(err),
  });
  try {
    const js = jetstream(operator!);
    const jsm = await jetstreamManager(operator!);
    await js.publish('gateway.tasks.acct_a.t_before', '{}');
    expect(await within(() => seen.length === 1)).not.toBe('never');
    const names: string[] = [];
    for await (const c of jsm.consumers.list('GATEWAY_TASKS')) names.push(c.name);
    const view = names.find((n) => n.startsWith('view_'));
    if (view === undefined)
      throw new Error(`Expected the watch's consumer on GATEWAY_TASKS but received ${names.join(', ') || 'none'}`);
    await jsm.consumers.delete('GATEWAY_TASKS', view);
    await js.publish('gateway.tasks.acct_a.t_after', '{}');
    process.stderr.write(
      `its consumer removed: the next record reached the watch after ${await within(() => seen.length === 2)}\n`,
    );
    expect(seen).toEqual(['gateway.tasks.acct_a.t_before', 'gateway.tasks.acct_a.t_after']);
    expect(await within(() => watch.live(Date.now()))).not.toBe('never');
    expect(errors).toEqual([]);
  } finally {
    await watch.stop();
  }
});
