/**
 * The shipped commands (dist/) as child processes for the gateway's end-to-end tests: `serve`,
 * `gateway` (its address read from its log line) and `accounts`.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { provisionFromEnv } from '../../helpers/provision.js';

export const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

export interface RunningProcess {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

export function startCommand(args: string[], env: NodeJS.ProcessEnv): RunningProcess {
  const child = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export async function startGatewayProcess(env: NodeJS.ProcessEnv): Promise<RunningProcess & { url: string }> {
  const proc = startCommand(['gateway'], { GATEWAY_HOST: '127.0.0.1', ...env });
  const url = await waitFor(
    'the gateway to listen',
    () => {
      if (proc.child.exitCode !== null) throw new Error(`gateway exited: ${proc.output()}`);
      return /"url":"(http:\/\/[^"]+)","msg":"media-worker gateway listening"/.exec(proc.output())?.[1];
    },
    30_000,
  );
  return { ...proc, url };
}

export async function accountsCommand(args: string[], env: NodeJS.ProcessEnv): Promise<unknown> {
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'accounts', ...args], {
    env: { ...process.env, ...env },
  });
  return JSON.parse(stdout) as unknown;
}

/** A port free right now, for a gateway whose address must be known before it starts (RESULTS_BASE_URL). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/**
 * The worker's side of a service end-to-end test: one image slot (the other kinds are not run),
 * private URLs allowed, RESULTS_DIR and temporary files under `dir`.
 */
export async function workerTestEnv(dir: string): Promise<NodeJS.ProcessEnv> {
  return {
    LOG_LEVEL: 'info',
    MEDIA_WORKER_ALLOW_PRIVATE_URLS: '1',
    MEDIA_WORKER_TMP_DIR: await mkdtemp(path.join(dir, 'tmp-')),
    RESULTS_DIR: path.join(dir, 'results'),
    WORKER_HEALTH_PORT: '0',
    WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0,music-video=0',
  };
}

/**
 * The settings a service end-to-end test starts from: the worker's (above), the kinds it does not
 * run priced anyway (their tasks stay pending), results served by the gateway.
 */
export async function serviceTestEnv(dir: string): Promise<NodeJS.ProcessEnv> {
  return { ...(await workerTestEnv(dir)), WORKER_QUOTE_UNSERVED: 'price', GATEWAY_SERVE_RESULTS: 'true' };
}

/** Each role's NATS credentials and inbox (test/helpers/role-nats.ts `env()`), laid over the shared settings. */
export interface RoleEnvs {
  operator: NodeJS.ProcessEnv;
  worker: NodeJS.ProcessEnv;
  gateway: NodeJS.ProcessEnv;
}

/**
 * `serve` and `gateway` on one host, the gateway serving RESULTS_DIR on a port chosen here (so
 * RESULTS_BASE_URL is known first and stays the same across a restart of the gateway). With
 * `roles`, provisioning runs as operator, `serve` as the worker host and `gateway` as gateway;
 * the returned `env` is the operator's (for `accounts`), `gatewayEnv` the gateway's (for a restart).
 */
export async function startServeAndGateway(
  base: NodeJS.ProcessEnv,
  /** Settings that depend on the results' address (the one-host recipe's MEDIA_WORKER_PRIVATE_ORIGINS). */
  more: (resultsBaseUrl: string) => NodeJS.ProcessEnv = () => ({}),
  roles?: RoleEnvs,
): Promise<{
  env: NodeJS.ProcessEnv;
  gatewayEnv: NodeJS.ProcessEnv;
  serve: RunningProcess;
  gateway: RunningProcess & { url: string };
}> {
  const port = await freePort();
  const resultsBaseUrl = `http://127.0.0.1:${port}/results/`;
  // Serving files needs a link secret (the gateway refuses to start without one).
  const env = {
    GATEWAY_LINK_SECRET: 'e2e-link-secret-of-at-least-32-characters',
    ...base,
    GATEWAY_PORT: String(port),
    RESULTS_BASE_URL: resultsBaseUrl,
    ...more(resultsBaseUrl),
  };
  // The operator's step at install: serve and gateway only check and bind.
  const operatorEnv = { ...env, ...roles?.operator };
  await provisionFromEnv(operatorEnv);
  const serve = startCommand(['serve'], { ...env, ...roles?.worker });
  await waitFor(
    'serve to run',
    () => {
      if (serve.child.exitCode !== null) throw new Error(`serve exited: ${serve.output()}`);
      return serve.output().includes('media-worker serving');
    },
    60_000,
  );
  const gatewayEnv = { ...env, ...roles?.gateway };
  return { env: operatorEnv, gatewayEnv, serve, gateway: await startGatewayProcess(gatewayEnv) };
}
