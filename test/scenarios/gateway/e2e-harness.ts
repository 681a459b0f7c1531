/**
 * The harness of the gateway's end-to-end tests with a real worker: the shipped `serve` and
 * `gateway` (dist/) under the shipped per-role NATS configuration (test/helpers/role-nats.ts), a
 * media host serving the test's files, accounts made with `media-worker accounts`, and the API
 * called over real HTTP. `provision` and `accounts` run as operator, `serve` as worker host
 * `host1`, `gateway` as gateway, each with its own reply inbox, so a permission the code needs and
 * deploy/nats lacks fails the test. Music and lip-sync jobs are priced but never run (no slot for
 * them), so such a task stays pending; image jobs run for real.
 *
 * `useGatewayE2e` registers the file's beforeAll and afterAll; the returned object's fields are
 * set once the beforeAll has run.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, expect } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { controlPlane, waitFor, type ControlPlane } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { startMediaServer, type MediaServer } from './media-server.js';
import {
  accountsCommand,
  serviceTestEnv,
  startGatewayProcess,
  startServeAndGateway,
  type RunningProcess,
} from './processes.js';

export interface Account {
  id: string;
  key: string;
}

export interface Reply {
  status: number;
  body: {
    success: boolean;
    data?: Record<string, unknown> & { id?: string };
    error?: { code: string; message: string };
  };
}

export interface GatewayE2eOptions {
  /** The temporary directory's prefix. */
  name: string;
  /** The media host's files by path, made in the test's directory. */
  files: (dir: string) => Promise<Record<string, Buffer>>;
  route?: (req: IncomingMessage, res: ServerResponse) => boolean;
  /** Settings beside the harness's own (which they may override). */
  env?: NodeJS.ProcessEnv;
  /** Settings of the gateway alone (a bucket's credentials the worker host must not hold). */
  gatewayEnv?: NodeJS.ProcessEnv;
}

/**
 * The media host's files of the tests that upscale one small photo: `/small.png`, the bundled
 * chelsea.png at 40x27 (80x54 once upscaled x2).
 */
export async function smallPngFiles(): Promise<Record<string, Buffer>> {
  return { '/small.png': await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer() };
}

export interface GatewayE2e {
  roles: RoleNats;
  /** The tests' own hand in NATS (reading events, replaying one): the operator's. */
  cp: ControlPlane;
  dir: string;
  mediaUrl: string;
  serve: RunningProcess;
  gateway: RunningProcess & { url: string };
  /** The operator's environment (for `accounts`). */
  env: NodeJS.ProcessEnv;
  /** The gateway's, for a restart. */
  gatewayEnv: NodeJS.ProcessEnv;
  newAccount(credits: number): Promise<Account>;
  api(
    method: string,
    route: string,
    key: string | null,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<Reply>;
  /** A new gateway process with the same settings, in place of the one killed. */
  restartGateway(): Promise<RunningProcess & { url: string }>;
  /** The account's task once a poll shows it settled (settledTask). */
  settled(account: Account, id: string, timeoutMs?: number): Promise<Reply>;
}

/** What settledTask reads of a poll's answer. */
export interface PolledTask {
  body: { data?: Record<string, unknown> };
}

/**
 * The task's answer to GET /api/v1/tasks/{id} once it is settled (no longer `pending`: completed or
 * failed), polled: a test asserts the task's state after waiting for that state itself, never after a
 * side effect of it (a webhook, a file, a log line), which a loaded machine may show first. `get`
 * makes the request with the task owner's key.
 */
export function settledTask<R extends PolledTask>(
  id: string,
  get: (route: string) => Promise<R>,
  timeoutMs = 120_000,
): Promise<R> {
  return waitFor(
    `task ${id} to settle`,
    async () => {
      const reply = await get(`/api/v1/tasks/${id}`);
      return reply.body.data?.['status'] === 'pending' ? undefined : reply;
    },
    timeoutMs,
    200,
  );
}

export function useGatewayE2e(options: GatewayE2eOptions): GatewayE2e {
  let media: MediaServer | undefined;
  const e2e = {
    async newAccount(credits: number): Promise<Account> {
      const out = (await accountsCommand(['create', '--name', 'e2e', '--credits', String(credits)], e2e.env)) as {
        account: { id: string };
        apiKey: string;
        credits: number;
      };
      expect(out.credits).toBe(credits);
      return { id: out.account.id, key: out.apiKey };
    },
    async api(
      method: string,
      route: string,
      key: string | null,
      body?: unknown,
      headers: Record<string, string> = {},
    ): Promise<Reply> {
      const res = await fetch(`${e2e.gateway.url}${route}`, {
        method,
        headers: {
          ...(key === null ? {} : { authorization: `Bearer ${key}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Reply['body'] };
    },
    async restartGateway() {
      e2e.gateway = await startGatewayProcess(e2e.gatewayEnv);
      return e2e.gateway;
    },
    settled(account: Account, id: string, timeoutMs?: number): Promise<Reply> {
      return settledTask(id, (route) => e2e.api('GET', route, account.key), timeoutMs);
    },
  } as GatewayE2e;

  beforeAll(async () => {
    e2e.dir = await mkdtemp(path.join(tmpdir(), options.name));
    media = await startMediaServer(
      await options.files(e2e.dir),
      options.route === undefined ? {} : { route: options.route },
    );
    e2e.mediaUrl = media.url;
    e2e.roles = await startRoleNats(e2e.dir);
    const env = {
      // Lip-sync and music jobs only need pricing: nobody runs them (they wait in the stream).
      ...(await serviceTestEnv(e2e.dir)),
      MEDIA_WORKER_LIPSYNC_MODELS: 'wav2lip-test',
      ...options.env,
    };
    // The gateway serves RESULTS_DIR, so the results' base URL is the gateway's own.
    const roleEnvs = e2e.roles.serviceEnvs();
    Object.assign(
      e2e,
      await startServeAndGateway(env, undefined, {
        ...roleEnvs,
        gateway: { ...roleEnvs.gateway, ...options.gatewayEnv },
      }),
    );
    e2e.cp = await controlPlane(
      e2e.roles.url,
      { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' },
      e2e.roles.auth('operator'),
    );
  }, 180_000);

  afterAll(async () => {
    await e2e.gateway?.kill('SIGKILL');
    await e2e.serve?.kill('SIGKILL');
    await e2e.cp?.close();
    await e2e.roles?.close();
    media?.close();
    if (e2e.dir !== undefined) await rm(e2e.dir, { recursive: true, force: true });
  });

  return e2e;
}
