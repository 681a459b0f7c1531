import type { Command } from 'commander';
import {
  destinationProblem,
  gatewaySettingsFromEnv,
  openStore,
  parseWebhookUrl,
  type GatewaySettings,
  type Store,
} from '../../gateway/index.js';
import { connectNats, protocolSettingsFromEnv } from '../../protocol/index.js';
import { UsageError } from '../job-arg.js';
import { reportFailure } from '../exit.js';

export function registerAccounts(program: Command): void {
  const accounts = program
    .command('accounts')
    .summary('operators: create gateway accounts, add credits, show balances')
    .description(
      'Accounts of `media-worker gateway`, stored in NATS JetStream (NATS_URL, GATEWAY_STREAM_PREFIX). Output is JSON.',
    );

  accounts
    .command('create')
    .description(
      'Creates an account with an API key and a webhook signing secret (whsec_…); both are printed once. The key is stored only as its SHA-256; the secret as it is (webhooks are signed with it).',
    )
    .requiredOption('--name <name>', "a name for the operator's records")
    .option('--credits <n>', 'opening balance', '0')
    .action(async (opts: { name: string; credits: string }) => {
      await withStore(async (store) => {
        const { account, apiKey } = await store.accounts.create(opts.name, credits(opts.credits));
        const made = await store.webhooks.newSecret(account.id, false);
        return {
          account,
          apiKey,
          webhookSecret: 'secret' in made ? made.secret : undefined,
          credits: await store.ledger.balance(account.id),
        };
      });
    });

  accounts
    .command('topup')
    .description('Adds credits to an account; prints the new balance.')
    .argument('<account>', 'account id (acct_…)')
    .argument('<credits>', 'credits to add, a positive integer')
    .action(async (accountId: string, amount: string) => {
      await withStore(async (store) => {
        await mustExist(store, accountId);
        return { accountId, credits: await store.ledger.topup(accountId, credits(amount, 1)) };
      });
    });

  accounts
    .command('add-key')
    .description('Adds another API key to an account (printed once, stored as its SHA-256); the old keys keep working.')
    .argument('<account>', 'account id (acct_…)')
    .action(async (accountId: string) => {
      await withStore(async (store) => {
        await mustExist(store, accountId);
        return { accountId, apiKey: await store.accounts.addKey(accountId) };
      });
    });

  accounts
    .command('keys')
    .description(
      "Lists the API keys of an account by key id (the first 16 hex digits of the key's SHA-256), with when each was made and revoked.",
    )
    .argument('<account>', 'account id (acct_…)')
    .action(async (accountId: string) => {
      await withStore(async (store) => {
        await mustExist(store, accountId);
        return { accountId, keys: await store.accounts.listKeys(accountId) };
      });
    });

  accounts
    .command('revoke-key')
    .description(
      'Revokes one API key of an account (by its key id from `accounts keys`); requests with it get 401 from then on.',
    )
    .argument('<account>', 'account id (acct_…)')
    .argument('<key-id>', '16 hex digits, from `accounts keys`')
    .action(async (accountId: string, keyId: string) => {
      await withStore(async (store) => {
        await mustExist(store, accountId);
        if (!(await store.accounts.revokeKey(accountId, keyId)))
          throw new UsageError(`Expected the id of one of the account's keys but received ${JSON.stringify(keyId)}`);
        return { accountId, keyId, revoked: true };
      });
    });

  accounts
    .command('webhook-secret')
    .description(
      "Makes the account's webhook signing secret (whsec_…) and prints it once. An account that has one needs --rotate: the new secret signs from now on, " +
        'and the old one too for 24 hours (both signatures are sent), so receivers can switch without losing a webhook.',
    )
    .argument('<account>', 'account id (acct_…)')
    .option('--rotate', 'replace the existing secret (the old one keeps signing for 24 h)')
    .action(async (accountId: string, opts: { rotate?: boolean }) => {
      await withStore(async (store) => {
        await mustExist(store, accountId);
        const made = await store.webhooks.newSecret(accountId, opts.rotate === true);
        if (!('secret' in made))
          throw new UsageError(
            'Expected --rotate for an account that has a webhook secret already (it was printed when it was made)',
          );
        return {
          accountId,
          webhookSecret: made.secret,
          ...(made.previousUntil === undefined ? {} : { previousSecretSignsUntil: made.previousUntil }),
        };
      });
    });

  accounts
    .command('webhook-url')
    .description(
      "Sets the account's default webhook endpoint (used by submissions without webhook_url; https to a public address, " +
        'GATEWAY_WEBHOOK_ALLOW_LOOPBACK allowing loopback), or removes it with --clear. Setting it again turns it back on after a 410.',
    )
    .argument('<account>', 'account id (acct_…)')
    .argument('[url]', 'the endpoint')
    .option('--clear', 'remove the default endpoint')
    .action(async (accountId: string, raw: string | undefined, opts: { clear?: boolean }) => {
      await withStore(async (store, settings) => {
        await mustExist(store, accountId);
        if ((raw === undefined) === (opts.clear !== true)) throw new UsageError('Expected either a URL or --clear');
        let url: string | null = null;
        if (raw !== undefined) {
          const policy = { allowLoopback: settings.webhookAllowLoopback };
          const parsed = parseWebhookUrl(raw, policy);
          if ('problem' in parsed) throw new UsageError(parsed.problem);
          const problem = await destinationProblem(parsed.url, policy);
          if (problem !== null) throw new UsageError(`Expected the URL to reach a public address but ${problem}`);
          url = parsed.url.toString();
        }
        if (!(await store.webhooks.setDefaultUrl(accountId, url)))
          throw new UsageError(
            'Expected an account with a webhook secret: make one first with `accounts webhook-secret`',
          );
        return { accountId, defaultWebhookUrl: url };
      });
    });

  accounts
    .command('show')
    .description('Shows an account, its balance and its latest ledger entries.')
    .argument('<account>', 'account id (acct_…)')
    .option('--entries <n>', 'ledger entries shown, newest last', '20')
    .action(async (accountId: string, opts: { entries: string }) => {
      await withStore(async (store) => {
        const account = await mustExist(store, accountId);
        const last = await store.ledger.last(accountId);
        const n = credits(opts.entries, 0);
        const all = await store.ledger.entries(accountId, Math.max(0, (last?.seq ?? 0) - 10 * n - 1), 10_000);
        const entries = all.slice(-n).map((e) => {
          const { job: _job, extras: _extras, ...rest } = e.value as Record<string, unknown>;
          return { seq: e.seq, ...rest };
        });
        return { account, credits: last?.value.balance ?? 0, entries };
      });
    });
}

function credits(raw: string, min = 0): number {
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min)
    throw new UsageError(`Expected an integer of at least ${min} but received ${JSON.stringify(raw)}`);
  return n;
}

async function mustExist(store: Store, accountId: string) {
  const account = await store.accounts.get(accountId);
  if (account === null)
    throw new UsageError(`Expected an existing account id but received ${JSON.stringify(accountId)}`);
  return account;
}

async function withStore(action: (store: Store, settings: GatewaySettings) => Promise<unknown>): Promise<void> {
  try {
    const settings = gatewaySettingsFromEnv();
    const protocol = protocolSettingsFromEnv();
    const nc = await connectNats({ ...protocol, natsName: 'media-worker-accounts' });
    try {
      const out = await action(await openStore(nc, settings.streamPrefix, protocol.streamReplicas), settings);
      process.stdout.write(`${JSON.stringify(out)}\n`);
    } finally {
      await nc.close();
    }
  } catch (err) {
    process.exitCode = reportFailure(err);
  }
}
