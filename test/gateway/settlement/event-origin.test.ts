/**
 * Which terminal events the gateway believes (src/gateway/settlement/event-origin.ts), against a real
 * MEDIA_CLAIMS stream and its stored times: only the host whose claim holds the task and that
 * marked its settlement while it held it, under its own subject, about the subject's task. A host
 * that never claimed, claimed while another's lease held, or whose lease lapsed and was taken
 * over, is not believed.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventOrigin, subjectHost } from '../../../src/gateway/settlement/event-origin.js';
import {
  claimTask,
  claimsStreamConfig,
  parseProtocolSettings,
  taskLease,
  type ClaimOp,
} from '../../../src/protocol/index.js';
import { startNatsServer, type TestNatsServer } from '../../worker/helpers/nats-server.js';
import { waitFor } from '../../worker/helpers/jetstream.js';

let server: TestNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
const settings = parseProtocolSettings({ claimsStream: 'EO_CLAIMS' });

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  jsm = await jetstreamManager(nc);
  await jsm.streams.delete(settings.claimsStream).catch(() => undefined);
  await jsm.streams.add(claimsStreamConfig(settings));
});

afterAll(async () => {
  await jsm?.streams.delete(settings.claimsStream).catch(() => undefined);
  await nc?.close();
  await server?.close();
});

const claim = (host: string, taskId: string, op: ClaimOp = 'claim', leaseMs = 60_000) =>
  claimTask(jetstream(nc), jsm, { claimsStream: settings.claimsStream, host, timeoutMs: 2000, leaseMs }, taskId, op);
const origin = (host: string, taskId: string) =>
  eventOrigin(jsm, settings.claimsStream, `media.events.${host}.${taskId}`, { id: taskId });

describe('event origin', () => {
  it('names the host of media.events.<host>.<task> only when the body is about that task', () => {
    expect(subjectHost('media.events.host1.t1', { id: 't1' })).toEqual({ host: 'host1' });
    expect(subjectHost('media.events.t1', { id: 't1' })).toMatchObject({
      reason: expect.stringMatching(/is not media\.events\.<host>\.<task id>/),
    });
    expect(subjectHost('media.events.host1.invalid.abc', { id: 't1' })).toMatchObject({ reason: expect.any(String) });
    expect(subjectHost('media.events.host1.t2', { id: 't1' })).toMatchObject({
      reason: 'the event is about task "t1" but was published for t2',
    });
  });

  it('believes the holder once it marked its settlement; a host that never claimed, or claimed while the lease held, is not', async () => {
    expect(await origin('host2', 'eo-1')).toEqual({
      believed: false,
      reason: 'host host2 sent it but no host claimed the task',
    });
    expect((await claim('host1', 'eo-1')).holder).toBe('host1');
    // host2 claims, renews and settles while host1's lease holds: all refused.
    const stolen = await claim('host2', 'eo-1');
    expect(stolen.holder).toBe('host1');
    expect((await claim('host2', 'eo-1', 'settle')).refused.map((r) => r.op)).toEqual(['claim', 'settle']);
    expect(await origin('host1', 'eo-1')).toEqual({
      believed: false,
      reason: 'host host1 sent it without marking its settlement while its claim held',
    });
    expect(await origin('host2', 'eo-1')).toEqual({
      believed: false,
      reason: 'host host2 sent it but host host1 holds the task (claim generation 1)',
    });
    const mark = await claim('host1', 'eo-1', 'settle');
    expect(mark).toMatchObject({ holder: 'host1', settled: true });
    expect(await origin('host1', 'eo-1')).toEqual({ believed: true, host: 'host1' });
    expect(await origin('host2', 'eo-1')).toEqual({
      believed: false,
      reason: 'host host2 sent it but host host1 settles the task (claim generation 1)',
    });
    // Another task's claims do not count for this one.
    await claim('host2', 'eo-2', 'settle');
    expect(await origin('host2', 'eo-2')).toEqual({ believed: true, host: 'host2' });
  });

  it("a lapsed lease is taken over by the server's clock: the old holder's settle mark and event are refused, the new holder's believed", async () => {
    await claim('host1', 'eo-3', 'claim', 1000);
    // host2 tries until its claim is stored after host1's lease lapsed (the server's times decide, not this test's clock).
    const taken = await waitFor(
      'host2 to take the task over',
      async () => {
        const lease = await claim('host2', 'eo-3', 'claim', 60_000);
        return lease.holder === 'host2' ? lease : undefined;
      },
      20_000,
      200,
    );
    expect(taken.generation).toBe(2);
    // host1 comes back (it was cut off): its renewal and its settle mark are refused, its event not believed.
    expect((await claim('host1', 'eo-3', 'renew', 1000)).holder).toBe('host2');
    expect(await claim('host1', 'eo-3', 'settle', 1000)).toMatchObject({ holder: 'host2', settled: false });
    expect(await origin('host1', 'eo-3')).toEqual({
      believed: false,
      reason: 'host host1 sent it but host host2 holds the task (claim generation 2)',
    });
    await claim('host2', 'eo-3', 'settle');
    expect(await origin('host2', 'eo-3')).toEqual({ believed: true, host: 'host2' });
    expect(await origin('host1', 'eo-3')).toMatchObject({ believed: false });
    // What a control plane reads: the server's stored time of every entry.
    const lease = await taskLease(jsm, settings.claimsStream, 'eo-3');
    expect(lease).toMatchObject({ holder: 'host2', generation: 2, settled: true });
  });

  it('reads a 2.0 claim (no lease) as the first claim that settles, and ignores an unreadable one', async () => {
    const js = jetstream(nc);
    await js.publish('media.claims.host3.eo-4', 'not json');
    await js.publish(
      'media.claims.host1.eo-4',
      JSON.stringify({ id: 'eo-4', host: 'host1', at: new Date().toISOString() }),
    );
    expect(await origin('host1', 'eo-4')).toEqual({ believed: true, host: 'host1' });
    expect(await origin('host3', 'eo-4')).toMatchObject({ believed: false });
  });
});
