/** The gateway's store over one NATS connection: accounts, ledger, tasks, webhooks, idempotency keys. */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Accounts } from './accounts.js';
import { IdempotencyKeys } from './idempotency-keys.js';
import { Ledger } from './ledger.js';
import { PROVISION_HINT } from '../../protocol/index.js';
import { storeNames, storeStreamProblems, type StoreNames } from './streams.js';
import { Tasks } from './tasks.js';
import { WebhookStore } from '../webhooks/store.js';

export interface Store {
  names: StoreNames;
  accounts: Accounts;
  ledger: Ledger;
  tasks: Tasks;
  webhooks: WebhookStore;
  idempotency: IdempotencyKeys;
}

/** Binds to the store's streams, which `media-worker provision` made; refuses when one is missing or differs. */
export async function openStore(nc: NatsConnection, prefix: string, replicas = 1): Promise<Store> {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  const problems = await storeStreamProblems(jsm, prefix, replicas);
  if (problems.length > 0)
    throw new StoreTopologyError(
      `The gateway's streams are not as its settings expect (${problems.join('; ')}): ${PROVISION_HINT}`,
    );
  const names = storeNames(prefix);
  const ledger = new Ledger(jsm, js, names);
  return {
    names,
    ledger,
    accounts: new Accounts(jsm, js, names, ledger),
    tasks: new Tasks(jsm, js, names),
    webhooks: new WebhookStore(jsm, js, names),
    idempotency: new IdempotencyKeys(jsm, js, names),
  };
}

export class StoreTopologyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreTopologyError';
  }
}
