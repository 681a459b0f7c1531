/**
 * A nats-server running the shipped per-role configuration (deploy/nats/nats-server.conf and its
 * media-users.conf, as they are), for the tests that must fail when the code needs a permission
 * the configuration lacks. Every process gets its role's credentials and reply inbox from `env()`;
 * a test connects with `connectAs()`. The passwords are in the form the README's recipe makes
 * (`mw` + hex) with hex that begins with digits (`12e4…`, all digits): the form nats-server would
 * otherwise read as a number and refuse to start with (deploy/nats/nats-server.conf).
 *
 * `hosts`: worker hosts besides the shipped `host1`, each added as docs/operations.md says (the
 * host block copied with its name replaced).
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { startNatsServer, type TestNatsServer } from '../worker/helpers/nats-server.js';
import type { ThrowawayCa } from './throwaway-ca.js';
import { SHIPPED_HOST, passwordVariable, usersWithHosts } from '../../scripts/nats-users.js';

export type Role = 'gateway' | 'operator' | `worker-${string}`;

export interface RoleNats {
  server: TestNatsServer;
  url: string;
  /** `MW_…_PASSWORD` of every user, as the server's environment has them. */
  passwords: Record<string, string>;
  /** NATS_USER, NATS_PASSWORD, NATS_INBOX_PREFIX (and WORKER_HOST_ID for a worker host) of a role. */
  env(role: Role): Record<string, string>;
  connectAs(role: Role, options?: { timeout?: number }): Promise<NatsConnection>;
  /** A role's user, password and inbox as connection options (for helpers that connect themselves). */
  auth(role: Role): { user: string; pass: string; inboxPrefix: string };
  /** A role's credentials, inbox (and host id) as worker settings, for a worker started in the test's process. */
  settingsOf(role: Role): { natsUser: string; natsPassword: string; natsInboxPrefix: string; hostId?: string };
  /** The environments of `media-worker provision` (operator), `serve` (worker host `host`) and `gateway`. */
  serviceEnvs(host?: string): {
    operator: Record<string, string>;
    worker: Record<string, string>;
    gateway: Record<string, string>;
  };
  close(): Promise<void>;
}

/** `mw` + 48 hex digits whose first ones are `lead`: what `mw$(openssl rand -hex 24)` gives on an unlucky draw. */
export function recipeSecret(lead: string, seed: number): string {
  let hex = lead;
  for (let i = 0; hex.length < 48; i += 1) hex += ((seed * 7919 + i * 104729) % 16).toString(16);
  return `mw${hex}`;
}

export function inboxPrefix(role: Role): string {
  return role.startsWith('worker-') ? '_INBOX_worker' : `_INBOX_${role}`;
}

export async function startRoleNats(
  dir: string,
  options: { hosts?: readonly string[]; tls?: ThrowawayCa; binary?: string } = {},
): Promise<RoleNats> {
  const hosts = options.hosts ?? [];
  const usersFile = await usersWithHosts(hosts);
  const users = ['gateway', 'operator', ...[SHIPPED_HOST, ...hosts].map((h) => `worker-${h}`)];
  const leads = ['12e4', '0000', '9e99', '1234', '00e1', '77'];
  const passwords = Object.fromEntries(
    users.map((u, i) => [passwordVariable(u), recipeSecret(leads[i % leads.length] ?? '1', i + 1)]),
  );
  // The shipped server file, its users file beside it (with the extra hosts), plus TLS when asked.
  const shippedServer = await readFile(path.join(PACKAGE_ROOT, 'deploy', 'nats', 'nats-server.conf'), 'utf8');
  await writeFile(path.join(dir, 'media-users.conf'), usersFile);
  await writeFile(path.join(dir, 'nats-server.conf'), shippedServer);
  const config = path.join(dir, 'nats.conf');
  const tls =
    options.tls === undefined
      ? ''
      : `tls { cert_file: "${options.tls.certFile}", key_file: "${options.tls.keyFile}" }\n`;
  await writeFile(config, `include "nats-server.conf"\n${tls}`);
  const server = await startNatsServer({
    configFile: config,
    env: passwords,
    ...(options.binary === undefined ? {} : { binary: options.binary }),
  });
  const password = (role: Role): string => passwords[passwordVariable(role)] ?? '';
  const env = (role: Role): Record<string, string> => ({
    NATS_URL: server.url,
    NATS_USER: role,
    NATS_PASSWORD: password(role),
    NATS_INBOX_PREFIX: inboxPrefix(role),
    ...(role.startsWith('worker-') ? { WORKER_HOST_ID: role.slice('worker-'.length) } : {}),
    ...(options.tls === undefined ? {} : { NATS_TLS_CA_FILE: options.tls.caFile }),
  });
  return {
    server,
    url: server.url,
    passwords,
    env,
    connectAs(role, o = {}) {
      return connect({
        servers: server.url,
        user: role,
        pass: password(role),
        inboxPrefix: inboxPrefix(role),
        maxReconnectAttempts: 0,
        ...(o.timeout === undefined ? {} : { timeout: o.timeout }),
        ...(options.tls === undefined ? {} : { tls: { caFile: options.tls.caFile } }),
      });
    },
    auth: (role) => ({ user: role, pass: password(role), inboxPrefix: inboxPrefix(role) }),
    settingsOf: (role) => ({
      natsUser: role,
      natsPassword: password(role),
      natsInboxPrefix: inboxPrefix(role),
      ...(role.startsWith('worker-') ? { hostId: role.slice('worker-'.length) } : {}),
    }),
    serviceEnvs(host = SHIPPED_HOST) {
      return { operator: env('operator'), worker: env(`worker-${host}`), gateway: env('gateway') };
    },
    close: () => server.close(),
  };
}
