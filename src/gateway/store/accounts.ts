/**
 * Accounts and their API keys. Only a key's SHA-256 is stored (src/gateway/ids.ts says why that is
 * enough); the key itself is shown once, when it is made.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { hashApiKey, newAccountId, newApiKey } from '../ids.js';
import type { Ledger } from './ledger.js';
import { accountRecordSchema, keyRecordSchema, type AccountRecord } from './records.js';
import type { StoreNames } from './streams.js';
import { readLast, writeIf } from './subject-store.js';

export class Accounts {
  constructor(
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly names: StoreNames,
    private readonly ledger: Ledger,
  ) {}

  /** A new account with `credits` and one API key (returned in clear, stored hashed). */
  async create(name: string, credits: number): Promise<{ account: AccountRecord; apiKey: string }> {
    const account: AccountRecord = { id: newAccountId(), name, createdAt: new Date().toISOString() };
    await writeIf(this.js, this.names.accountSubject(account.id), account, 0);
    await this.ledger.open(account.id, credits);
    const apiKey = await this.addKey(account.id);
    return { account, apiKey };
  }

  async addKey(accountId: string): Promise<string> {
    const apiKey = newApiKey();
    await writeIf(this.js, this.names.keySubject(hashApiKey(apiKey)), { accountId, createdAt: new Date().toISOString() }, 0);
    return apiKey;
  }

  async get(accountId: string): Promise<AccountRecord | null> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(accountId)) return null;
    return (await readLast(this.jsm, this.names.accountsStream, this.names.accountSubject(accountId), accountRecordSchema))?.value ?? null;
  }

  /** The account of an API key, or null for an unknown key. */
  async byKey(apiKey: string): Promise<string | null> {
    return (await readLast(this.jsm, this.names.accountsStream, this.names.keySubject(hashApiKey(apiKey)), keyRecordSchema))?.value.accountId ?? null;
  }
}
