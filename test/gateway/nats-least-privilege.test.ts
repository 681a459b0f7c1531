/**
 * Least privilege, by enumeration: under the shipped users (deploy/nats/media-users.conf, as it is,
 * with a second worker host added the documented way), each role tries every JetStream API
 * operation on every stream and consumer, and publishes and subscribes on every subject family;
 * the set the server lets through must be exactly the allow-list written here. On nats-server
 * 2.9.10 (Debian's, single node) and the suite's server (2.10.23+) alike, when both are present.
 *
 * Also the two attacks the roles once allowed (issue 31, findings 1 and 2): a worker updating
 * MEDIA_EVENTS with a republish into `gateway.>` (the server then wrote ledger entries for it) or
 * with sources copying the gateway's ledger, accounts and tasks (it could then read them).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionFromEnv } from '../helpers/provision.js';
import { startRoleNats, type RoleNats, type Role } from '../helpers/role-nats.js';
import { checkTopology, parseWorkerSettings } from '../../src/worker/index.js';
import { natsServerBinary } from '../worker/helpers/nats-server.js';

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
  'KV_media',
  'EVIL',
] as const;
type Stream = (typeof STREAMS)[number];
/** The durables `media-worker provision` makes, and one nobody made. */
const CONSUMERS: Record<Stream, string[]> = {
  MEDIA_JOBS: ['media-worker-image', 'evil'],
  MEDIA_EVENTS: ['gateway-events', 'evil'],
  MEDIA_JOBS_ADVISORIES: ['gateway-advisories', 'evil'],
  MEDIA_CLAIMS: ['evil'],
  GATEWAY_ACCOUNTS: ['evil'],
  GATEWAY_LEDGER: ['gateway-outbox', 'evil'],
  GATEWAY_TASKS: ['evil'],
  GATEWAY_WEBHOOKS: ['gateway-webhooks', 'evil'],
  GATEWAY_IDEMPOTENCY: ['evil'],
  KV_media: ['evil'],
  EVIL: ['evil'],
};
const STREAM_OPS = [
  'CREATE',
  'UPDATE',
  'DELETE',
  'PURGE',
  'INFO',
  'MSG.GET',
  'MSG.DELETE',
  'DIRECT.GET',
  'DIRECT.GET.subject',
  'SNAPSHOT',
  'RESTORE',
  'LEADER.STEPDOWN',
  'PEER.REMOVE',
] as const;
const CONSUMER_OPS = [
  'CREATE',
  'CREATE.named',
  'CREATE.filtered',
  'DURABLE.CREATE',
  'DELETE',
  'INFO',
  'MSG.NEXT',
  'LEADER.STEPDOWN',
  'NAMES',
  'LIST',
] as const;
const ACCOUNT_OPS = [
  '$JS.API.INFO',
  '$JS.API.STREAM.NAMES',
  '$JS.API.STREAM.LIST',
  '$JS.API.META.LEADER.STEPDOWN',
  '$JS.API.SERVER.REMOVE',
  '$JS.API.ACCOUNT.PURGE.x',
];
/** One subject of every family of the gateway's own store (all of them its alone). */
const GATEWAY_STORE = [
  'gateway.ledger.acct_enum',
  'gateway.accounts.acct_enum',
  'gateway.keys.0000',
  'gateway.tasks.acct_enum.t_enum',
  'gateway.owners.t_enum',
  'gateway.order.acct_enum.1',
  'gateway.webhooks.queue.t_enum',
  'gateway.webhooks.state.t_enum',
  'gateway.webhooks.account.acct_enum',
  'gateway.idempotency.acct_enum.key_enum',
];
/** One subject of every family the service uses, plus what no role should touch. */
const SUBJECTS = [
  'media.jobs.image.vendor-image-upscale',
  'media.events.host1.t_enum',
  'media.events.host2.t_enum',
  'media.events.t_enum',
  'media.claims.host1.t_enum',
  'media.claims.host2.t_enum',
  'media.progress.t_enum',
  'media.quote',
  'media.quote.abandon',
  'media.cancel',
  'media.capabilities',
  'media.abort.t_enum',
  ...GATEWAY_STORE,
  '$KV.media.key',
  '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MEDIA_JOBS.media-worker-image',
  '_INBOX.x',
  '_INBOX_worker.x',
  '_INBOX_gateway.x',
  '$SRV.PING',
];

function streamSubject(op: (typeof STREAM_OPS)[number], stream: string): string {
  if (op === 'DIRECT.GET.subject') return `$JS.API.DIRECT.GET.${stream}.x`;
  return `$JS.API.${op.startsWith('DIRECT') ? '' : 'STREAM.'}${op}.${stream}`;
}

function consumerSubject(op: (typeof CONSUMER_OPS)[number], stream: string, consumer: string): string {
  switch (op) {
    case 'CREATE':
      return `$JS.API.CONSUMER.CREATE.${stream}`;
    case 'CREATE.named':
      return `$JS.API.CONSUMER.CREATE.${stream}.${consumer}`;
    case 'CREATE.filtered':
      return `$JS.API.CONSUMER.CREATE.${stream}.${consumer}.x`;
    case 'NAMES':
    case 'LIST':
      return `$JS.API.CONSUMER.${op}.${stream}`;
    default:
      return `$JS.API.CONSUMER.${op}.${stream}.${consumer}`;
  }
}

/** Every request subject tried, with a label for the report. */
function jetStreamSubjects(): string[] {
  const out = [...ACCOUNT_OPS];
  for (const stream of STREAMS) {
    for (const op of STREAM_OPS) out.push(streamSubject(op, stream));
    for (const consumer of CONSUMERS[stream])
      for (const op of CONSUMER_OPS) out.push(consumerSubject(op, stream, consumer));
  }
  return [...new Set(out)];
}

/** The subjects the server refused this connection to publish to ("Permissions Violation for Publish to …"). */
function watchRefusals(nc: NatsConnection): Set<string> {
  const refused = new Set<string>();
  void (async () => {
    for await (const status of nc.status()) {
      const error = status.type === 'error' ? (status.error as { operation?: string; subject?: string }) : undefined;
      if (error?.operation === 'publish' && error.subject !== undefined) refused.add(error.subject);
    }
  })();
  return refused;
}

/**
 * The subjects the server let this connection publish to. A refused publish is answered at once
 * ("Permissions Violation for Publish to …"), before the flush's PONG, so no reply needs waiting
 * for. The body is empty JSON: enough for the permission check, harmless where allowed (the
 * allowed operations are reads, or fail on the missing fields).
 */
async function publishable(nc: NatsConnection, subjects: readonly string[]): Promise<string[]> {
  const refused = watchRefusals(nc);
  for (const subject of subjects) nc.publish(subject, '{}');
  await nc.flush();
  await new Promise((r) => setTimeout(r, 20));
  return subjects.filter((s) => !refused.has(s)).sort();
}

/** The subjects the server let this connection subscribe to (a refused subscription is closed at once). */
async function subscribable(nc: NatsConnection, subjects: readonly string[]): Promise<string[]> {
  const subs = subjects.map((subject) => ({ subject, sub: nc.subscribe(subject) }));
  await nc.flush();
  await new Promise((r) => setTimeout(r, 20));
  const allowed = subs.filter(({ sub }) => !sub.isClosed()).map(({ subject }) => subject);
  for (const { sub } of subs) sub.unsubscribe();
  return allowed.sort();
}

/** The allow-lists: the model of docs/operations.md ("Who creates what"). */
const WORKER_JS = (): string[] => {
  return [
    '$JS.API.INFO',
    ...['MEDIA_JOBS', 'MEDIA_EVENTS', 'MEDIA_CLAIMS'].map((s) => `$JS.API.STREAM.INFO.${s}`),
    // No read or delete of MEDIA_JOBS by sequence (nor direct get): queued jobs reach a worker only by its consumers.
    '$JS.API.STREAM.MSG.GET.MEDIA_EVENTS',
    '$JS.API.STREAM.MSG.GET.MEDIA_CLAIMS',
    ...CONSUMERS.MEDIA_JOBS.flatMap((c) => [
      `$JS.API.CONSUMER.INFO.MEDIA_JOBS.${c}`,
      `$JS.API.CONSUMER.MSG.NEXT.MEDIA_JOBS.${c}`,
    ]),
  ];
};
const GATEWAY_JS = [
  '$JS.API.INFO',
  ...[
    'MEDIA_JOBS',
    'MEDIA_EVENTS',
    'MEDIA_JOBS_ADVISORIES',
    'MEDIA_CLAIMS',
    'GATEWAY_ACCOUNTS',
    'GATEWAY_LEDGER',
    'GATEWAY_TASKS',
    'GATEWAY_WEBHOOKS',
    'GATEWAY_IDEMPOTENCY',
  ].map((s) => `$JS.API.STREAM.INFO.${s}`),
  '$JS.API.STREAM.MSG.GET.MEDIA_CLAIMS',
  // Jobs whose deliveries ran out: read, settled and removed (src/gateway/settlement/exhausted-jobs.ts).
  '$JS.API.STREAM.MSG.GET.MEDIA_JOBS',
  '$JS.API.STREAM.MSG.DELETE.MEDIA_JOBS',
  '$JS.API.STREAM.MSG.GET.MEDIA_EVENTS',
  '$JS.API.STREAM.MSG.GET.GATEWAY_ACCOUNTS',
  '$JS.API.STREAM.MSG.GET.GATEWAY_WEBHOOKS',
  '$JS.API.STREAM.MSG.GET.GATEWAY_IDEMPOTENCY',
  ...['GATEWAY_LEDGER', 'GATEWAY_TASKS'].flatMap((s) => [
    `$JS.API.STREAM.MSG.GET.${s}`,
    `$JS.API.DIRECT.GET.${s}`,
    `$JS.API.DIRECT.GET.${s}.x`,
  ]),
  ...['MEDIA_EVENTS', 'MEDIA_JOBS_ADVISORIES', 'GATEWAY_LEDGER', 'GATEWAY_WEBHOOKS'].flatMap((s) =>
    CONSUMERS[s as Stream].flatMap((c) => [`$JS.API.CONSUMER.INFO.${s}.${c}`, `$JS.API.CONSUMER.MSG.NEXT.${s}.${c}`]),
  ),
  // The poll view's ordered consumers (src/gateway/poll-view) pull from consumers they name themselves,
  // and check them after missed heartbeats; creating one is allowed only with its own filter, which
  // the enumeration's `x` filter is not.
  ...['GATEWAY_ACCOUNTS', 'GATEWAY_TASKS'].flatMap((s) =>
    CONSUMERS[s as Stream].flatMap((c) => [`$JS.API.CONSUMER.INFO.${s}.${c}`, `$JS.API.CONSUMER.MSG.NEXT.${s}.${c}`]),
  ),
];
const WORKER_PUBLISH = (host: string): string[] => [
  `media.events.${host}.t_enum`,
  `media.claims.${host}.t_enum`,
  'media.progress.t_enum',
  'media.capabilities',
  'media.abort.t_enum',
];
const GATEWAY_PUBLISH = [
  'media.jobs.image.vendor-image-upscale',
  'media.quote',
  'media.quote.abandon',
  'media.cancel',
  ...GATEWAY_STORE,
];
const WORKER_SUBSCRIBE = [
  '_INBOX_worker.x',
  'media.quote',
  'media.quote.abandon',
  'media.cancel',
  'media.capabilities',
  'media.abort.t_enum',
  '$SRV.PING',
];
const GATEWAY_SUBSCRIBE = ['_INBOX_gateway.x', 'media.progress.t_enum'];

const servers = [
  ...new Set([natsServerBinary(), ...(existsSync('/usr/sbin/nats-server') ? ['/usr/sbin/nats-server'] : [])]),
];

describe.each(servers)('the shipped users on %s', (binary) => {
  let dir: string;
  let nats: RoleNats;
  const connections: NatsConnection[] = [];
  const as = async (role: Role): Promise<NatsConnection> => {
    const nc = await nats.connectAs(role);
    connections.push(nc);
    return nc;
  };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'media-least-privilege-'));
    nats = await startRoleNats(dir, { hosts: ['host2'], binary });
    await provisionFromEnv(nats.env('operator'));
  }, 60_000);

  afterAll(async () => {
    for (const nc of connections) await nc.close().catch(() => undefined);
    await nats?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it.each([
    ['worker-host1', WORKER_JS(), WORKER_PUBLISH('host1'), WORKER_SUBSCRIBE],
    ['worker-host2', WORKER_JS(), WORKER_PUBLISH('host2'), WORKER_SUBSCRIBE],
    ['gateway', GATEWAY_JS, GATEWAY_PUBLISH, GATEWAY_SUBSCRIBE],
  ] as const)(
    '%s: exactly its allow-list of JetStream operations, publishes and subscriptions',
    async (role, js, publish, subscribe) => {
      const nc = await as(role);
      expect(await publishable(nc, jetStreamSubjects())).toEqual([...js].sort());
      expect(await publishable(nc, SUBJECTS)).toEqual([...publish].sort());
      expect(await subscribable(nc, SUBJECTS)).toEqual([...subscribe].sort());
    },
    60_000,
  );

  it('operator: everything (provisioning, the nats CLI)', async () => {
    const nc = await as('operator');
    // Last, because it may: deletes and purges happen here for real.
    expect(await subscribable(nc, SUBJECTS)).toEqual([...SUBJECTS].sort());
    expect(await publishable(nc, jetStreamSubjects())).toEqual(jetStreamSubjects().sort());
    // Provisioning again (an upgrade) puts back what the enumeration deleted.
    await provisionFromEnv(nats.env('operator'));
  }, 60_000);
});

describe.each(servers)('a worker host attacking through stream configuration on %s', (binary) => {
  let dir: string;
  let nats: RoleNats;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'media-stream-attacks-'));
    nats = await startRoleNats(dir, { binary });
    await provisionFromEnv(nats.env('operator'));
  }, 60_000);

  afterAll(async () => {
    await nats?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('cannot update MEDIA_EVENTS with a republish into gateway.> or sources of the ledger, accounts and tasks; nothing changes', async () => {
    const worker = await nats.connectAs('worker-host1');
    const operator = await nats.connectAs('operator');
    try {
      const wjsm = await jetstreamManager(worker, { timeout: 2000 });
      const ojsm = await jetstreamManager(operator);
      const before = (await ojsm.streams.info('MEDIA_EVENTS')).config;
      const republish = { ...before, republish: { src: 'media.events.>', dest: 'gateway.ledger.acct_victim' } };
      const sources = {
        ...before,
        sources: ['GATEWAY_LEDGER', 'GATEWAY_ACCOUNTS', 'GATEWAY_TASKS'].map((name) => ({ name })),
      };
      for (const [what, config] of [
        ['republish', republish],
        ['sources', sources],
      ] as const) {
        await expect(wjsm.streams.update('MEDIA_EVENTS', config), what).rejects.toThrow(/permission/i);
      }
      // Nor may it make a stream of its own that sources or mirrors the gateway's.
      await expect(
        wjsm.streams.add({ name: 'COPY', subjects: ['copy.>'], sources: [{ name: 'GATEWAY_LEDGER' }] }),
      ).rejects.toThrow(/permission/i);
      await expect(wjsm.streams.add({ name: 'MIRROR', mirror: { name: 'GATEWAY_ACCOUNTS' } })).rejects.toThrow(
        /permission/i,
      );
      const after = (await ojsm.streams.info('MEDIA_EVENTS')).config;
      expect(after.republish).toBeUndefined();
      expect(after.sources ?? []).toEqual([]);
      expect(after).toEqual(before);
      expect((await ojsm.streams.names().next()).sort()).toEqual([
        'GATEWAY_ACCOUNTS',
        'GATEWAY_IDEMPOTENCY',
        'GATEWAY_LEDGER',
        'GATEWAY_TASKS',
        'GATEWAY_WEBHOOKS',
        'MEDIA_CLAIMS',
        'MEDIA_EVENTS',
        'MEDIA_JOBS',
        'MEDIA_JOBS_ADVISORIES',
      ]);
    } finally {
      await worker.close();
      await operator.close();
    }
  }, 30_000);

  it('cannot read a queued job by its sequence (message get, direct get) nor delete it: the job stays queued', async () => {
    const worker = await nats.connectAs('worker-host1');
    const operator = await nats.connectAs('operator');
    try {
      const queued = await jetstream(operator).publish(
        'media.jobs.image.vendor-image-upscale',
        JSON.stringify({ id: 't_queued', model: 'vendor-image-upscale', input: {} }),
        { msgID: 't_queued' },
      );
      const wjsm = await jetstreamManager(worker, { timeout: 2000 });
      await expect(wjsm.streams.getMessage('MEDIA_JOBS', { seq: queued.seq })).rejects.toThrow(/permission|timeout/i);
      await expect(
        wjsm.streams.getMessage('MEDIA_JOBS', { last_by_subj: 'media.jobs.image.vendor-image-upscale' }),
      ).rejects.toThrow(/permission|timeout/i);
      await expect(wjsm.direct.getMessage('MEDIA_JOBS', { seq: queued.seq })).rejects.toThrow(/permission|timeout/i);
      await expect(wjsm.streams.deleteMessage('MEDIA_JOBS', queued.seq)).rejects.toThrow(/permission|timeout/i);
      const ojsm = await jetstreamManager(operator);
      expect((await ojsm.streams.getMessage('MEDIA_JOBS', { seq: queued.seq }))?.json()).toMatchObject({
        id: 't_queued',
      });
      await ojsm.streams.deleteMessage('MEDIA_JOBS', queued.seq);
    } finally {
      await worker.close();
      await operator.close();
    }
  }, 30_000);

  it('a worker or gateway that finds its streams missing refuses to start, naming `media-worker provision`', async () => {
    const operator = await nats.connectAs('operator');
    try {
      await (await jetstreamManager(operator)).streams.delete('MEDIA_CLAIMS');
    } finally {
      await operator.close();
    }
    const worker = await nats.connectAs('worker-host1');
    try {
      await expect(checkTopology(await jetstreamManager(worker), parseWorkerSettings({}))).rejects.toThrow(
        /stream MEDIA_CLAIMS does not exist.*run `media-worker provision` with the operator's credentials/,
      );
    } finally {
      await worker.close();
    }
    await provisionFromEnv(nats.env('operator'));
  }, 30_000);
});
