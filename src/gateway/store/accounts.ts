/**
 * Accounts and their API keys. Only a key's SHA-256 is stored (src/gateway/ids.ts says why that is
 * enough); the key itself is shown once, when it is made.
 */
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { hashApiKey, newAccountId, newApiKey } from '../ids.js';
import type { Ledger } from './ledger.js';
import { accountRecordSchema, keyRecordSchema, type AccountRecord, type KeyRecord } from './records.js';
import type { StoreNames } from './streams.js';
import { readLast, writeIf, type Versioned } from './subject-store.js';

const KEY_ID_LENGTH = 16;
const KEY_ID_PATTERN = /^[0-9a-f]{16}$/;

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
    await writeIf(
      this.js,
      this.names.keySubject(hashApiKey(apiKey)),
      { accountId, createdAt: new Date().toISOString() },
      0,
    );
    return apiKey;
  }

  async get(accountId: string): Promise<AccountRecord | null> {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(accountId)) return null;
    return (
      (await readLast(this.jsm, this.names.accountsStream, this.names.accountSubject(accountId), accountRecordSchema))
        ?.value ?? null
    );
  }

  /** The account of an API key, or null for an unknown or revoked key. */
  async byKey(apiKey: string): Promise<string | null> {
    const key = await this.keyRecord(hashApiKey(apiKey));
    return key === null || key.value.revokedAt !== undefined ? null : key.value.accountId;
  }

  /** The record of the key with this SHA-256 (revoked ones too), with its stream sequence. */
  keyRecord(keyHash: string): Promise<Versioned<KeyRecord> | null> {
    return readLast(this.jsm, this.names.accountsStream, this.names.keySubject(keyHash), keyRecordSchema);
  }

  /**
   * The keys of an account, each named by its id (the first 16 hex digits of its SHA-256, enough
   * to tell keys apart and useless to sign in with). For operators: it reads every key record of
   * the deployment, which is fine at an operator's pace.
   */
  async listKeys(accountId: string): Promise<(KeyRecord & { keyId: string })[]> {
    const out: (KeyRecord & { keyId: string })[] = [];
    for (const hash of await this.keyHashes()) {
      const key = await readLast(this.jsm, this.names.accountsStream, this.names.keySubject(hash), keyRecordSchema);
      if (key?.value.accountId === accountId) out.push({ keyId: hash.slice(0, KEY_ID_LENGTH), ...key.value });
    }
    return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** Revokes the account's key with this id; false when the account has no such key. Every gateway refuses it within a second (its key watch, src/gateway/poll-view). */
  async revokeKey(accountId: string, keyId: string): Promise<boolean> {
    if (!KEY_ID_PATTERN.test(keyId)) return false;
    for (const hash of await this.keyHashes()) {
      if (!hash.startsWith(keyId)) continue;
      const key = await readLast(this.jsm, this.names.accountsStream, this.names.keySubject(hash), keyRecordSchema);
      if (key === null || key.value.accountId !== accountId) continue;
      if (key.value.revokedAt === undefined)
        await writeIf(
          this.js,
          this.names.keySubject(hash),
          { ...key.value, revokedAt: new Date().toISOString() },
          key.seq,
        );
      return true;
    }
    return false;
  }

  private async keyHashes(): Promise<string[]> {
    const info = await this.jsm.streams.info(this.names.accountsStream, {
      subjects_filter: this.names.keySubject('*'),
    });
    return Object.keys(info.state.subjects ?? {}).map((s) => s.slice(s.lastIndexOf('.') + 1));
  }
}
