/** The gateway's store over one NATS connection: accounts, ledger, tasks. */
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Accounts } from './accounts.js';
import { Ledger } from './ledger.js';
import { ensureStoreStreams, storeNames, type StoreNames } from './streams.js';
import { Tasks } from './tasks.js';

export interface Store {
  names: StoreNames;
  accounts: Accounts;
  ledger: Ledger;
  tasks: Tasks;
}

export async function openStore(nc: NatsConnection, prefix: string, replicas = 1): Promise<Store> {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await ensureStoreStreams(jsm, prefix, replicas);
  const names = storeNames(prefix);
  const ledger = new Ledger(jsm, js, names);
  return { names, ledger, accounts: new Accounts(jsm, js, names, ledger), tasks: new Tasks(jsm, js, names) };
}
