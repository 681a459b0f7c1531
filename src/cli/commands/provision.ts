/**
 * `media-worker provision`: the one place where streams and durable consumers are created or
 * changed, run by the operator at install and at every upgrade (idempotent). Workers and gateways
 * only check and bind: their NATS users may not create or update a stream, because an update with
 * `sources`, `mirror` or `republish` makes the server copy or write any stream on the role's
 * behalf (docs/operations.md, "Who creates what").
 */
import type { Command } from 'commander';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { GATEWAY_SETTINGS } from '../../gateway/settings.js';
import { ensureConsumers, ensureStoreStreams, storeNames, streamConfigs } from '../../gateway/index.js';
import { connectNats, protocolSettingsFor, type ProtocolSettings } from '../../protocol/index.js';
import { settingsReader, SettingsError, tableSchema } from '../../settings-table.js';
import { ensureTopology, workerSettingsFromEnv, type WorkerSettings } from '../../worker/index.js';
import { reportFailure } from '../exit.js';

/** Only the gateway's names: provisioning needs no HTTP, link or upload settings. */
const GATEWAY_NAMES = { streamPrefix: GATEWAY_SETTINGS.streamPrefix, consumerPrefix: GATEWAY_SETTINGS.consumerPrefix };
const gatewayNames = settingsReader(GATEWAY_NAMES, tableSchema(GATEWAY_NAMES), SettingsError);

export interface ProvisionSettings {
  worker: WorkerSettings;
  protocol: Pick<
    ProtocolSettings,
    'eventsStream' | 'claimsStream' | 'jobsStream' | 'advisoriesStream' | 'streamReplicas'
  >;
  gateway: { streamPrefix: string; consumerPrefix: string };
}

/** Every stream and durable consumer of workers and gateways, as the settings say; returns their names. */
export async function provision(
  jsm: JetStreamManager,
  s: ProvisionSettings,
): Promise<{ streams: string[]; consumers: string[] }> {
  await ensureTopology(jsm, s.worker);
  await ensureStoreStreams(jsm, s.gateway.streamPrefix, s.protocol.streamReplicas);
  await ensureConsumers(jsm, {
    eventsStream: s.protocol.eventsStream,
    claimsStream: s.protocol.claimsStream,
    jobsStream: s.protocol.jobsStream,
    advisoriesStream: s.protocol.advisoriesStream,
    consumerPrefix: s.gateway.consumerPrefix,
    names: storeNames(s.gateway.streamPrefix),
  });
  const streams = [
    s.worker.jobsStream,
    s.worker.eventsStream,
    s.worker.advisoriesStream,
    s.worker.claimsStream,
    ...streamConfigs(s.gateway.streamPrefix).map((c) => c.name),
  ];
  const consumers = [
    ...(await listDurables(jsm, s.worker.jobsStream)),
    ...(await listDurables(jsm, s.worker.advisoriesStream)),
    ...(await listDurables(jsm, s.protocol.eventsStream)),
    ...(await listDurables(jsm, storeNames(s.gateway.streamPrefix).ledgerStream)),
    ...(await listDurables(jsm, storeNames(s.gateway.streamPrefix).webhooksStream)),
  ];
  return { streams, consumers };
}

async function listDurables(jsm: JetStreamManager, stream: string): Promise<string[]> {
  const names: string[] = [];
  for await (const info of jsm.consumers.list(stream)) names.push(`${stream}/${info.name}`);
  return names;
}

export function registerProvision(program: Command): void {
  program
    .command('provision')
    .summary('operators: create or update every stream and durable consumer (at install and upgrade)')
    .description(
      'Creates the streams (MEDIA_JOBS, MEDIA_EVENTS, MEDIA_JOBS_ADVISORIES, MEDIA_CLAIMS, <GATEWAY_STREAM_PREFIX>_ACCOUNTS/_LEDGER/_TASKS/_WEBHOOKS/_IDEMPOTENCY) and the ' +
        'durable consumers of workers and gateways, or brings them to the settings (the same environment as serve and gateway: ' +
        "WORKER_ACK_WAIT_MS, WORKER_MAX_DELIVER, NATS_STREAM_REPLICAS, ...). Idempotent. Run with the operator's NATS credentials: " +
        'workers and gateways may not change a stream, they check and bind. Prints JSON.',
    )
    .action(async () => {
      try {
        const protocol = protocolSettingsFor('media-worker-provision');
        const settings: ProvisionSettings = {
          worker: workerSettingsFromEnv(),
          protocol,
          gateway: gatewayNames.fromEnv(),
        };
        const nc = await connectNats(protocol);
        try {
          process.stdout.write(`${JSON.stringify(await provision(await jetstreamManager(nc), settings))}\n`);
        } finally {
          await nc.close();
        }
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}
