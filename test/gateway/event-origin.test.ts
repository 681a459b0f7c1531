/**
 * Which terminal events the gateway believes (src/gateway/event-origin.ts), against a real
 * MEDIA_CLAIMS stream: only the host of the task's first stored claim, under its own subject, about
 * the subject's task. A host that never claimed, or claimed second, is not believed.
 */
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventOrigin, subjectHost } from '../../src/gateway/event-origin.js';
import { claimTask, claimsStreamConfig, parseProtocolSettings } from '../../src/protocol/index.js';
import { startNatsServer, type TestNatsServer } from '../worker/helpers/nats-server.js';

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

const claim = (host: string, taskId: string) => claimTask(jetstream(nc), jsm, { claimsStream: settings.claimsStream, host, timeoutMs: 2000 }, taskId);

describe('event origin', () => {
  it('names the host of media.events.<host>.<task> only when the body is about that task', () => {
    expect(subjectHost('media.events.host1.t1', { id: 't1' })).toEqual({ host: 'host1' });
    expect(subjectHost('media.events.t1', { id: 't1' })).toMatchObject({ reason: expect.stringMatching(/is not media\.events\.<host>\.<task id>/) });
    expect(subjectHost('media.events.host1.invalid.abc', { id: 't1' })).toMatchObject({ reason: expect.any(String) });
    expect(subjectHost('media.events.host1.t2', { id: 't1' })).toMatchObject({ reason: 'the event is about task "t1" but was published for t2' });
  });

  it('believes the first claimer only; a host that never claimed or claimed second is not', async () => {
    expect(await eventOrigin(jsm, settings.claimsStream, 'media.events.host2.eo-1', { id: 'eo-1' })).toEqual({
      believed: false,
      reason: 'host host2 sent it but no host claimed the task',
    });
    expect(await claim('host1', 'eo-1')).toBe('host1');
    // host2 claims afterwards (and again: a no-op): host1 stays the first.
    expect(await claim('host2', 'eo-1')).toBe('host1');
    expect(await claim('host2', 'eo-1')).toBe('host1');
    expect(await eventOrigin(jsm, settings.claimsStream, 'media.events.host2.eo-1', { id: 'eo-1' })).toEqual({
      believed: false,
      reason: 'host host2 sent it but host host1 claimed the task first',
    });
    expect(await eventOrigin(jsm, settings.claimsStream, 'media.events.host1.eo-1', { id: 'eo-1' })).toEqual({ believed: true, host: 'host1' });
    // Another task's claims do not count for this one.
    expect(await claim('host2', 'eo-2')).toBe('host2');
    expect(await eventOrigin(jsm, settings.claimsStream, 'media.events.host2.eo-2', { id: 'eo-2' })).toEqual({ believed: true, host: 'host2' });
  });
});
