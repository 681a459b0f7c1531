/**
 * The gateway's HTTP app (buildApp) without NATS or a store: stand-ins for what the routes the
 * contract tests call never reach, an estimate that runs the worker's real quote in-process, and
 * one account. What it answers is the gateway's own code: routes, parsers, OpenAPI document.
 */
import { pino } from 'pino';
import type { Config } from '../../src/config.js';
import { quoteOnly } from '../../src/app/index.js';
import type { Job } from '../../src/jobs/index.js';
import { buildApp, type GatewayApp } from '../../src/gateway/http/app.js';
import { GatewayMetrics } from '../../src/gateway/monitoring/metrics.js';
import { estimateView } from '../../src/gateway/api-views.js';
import { gatewaySettingsFromEnv } from '../../src/gateway/settings.js';
import type { TaskRecord } from '../../src/gateway/store/records.js';

export const ACCOUNT_KEY = 'mwk_stand_in';
export const ACCOUNT_ID = 'acct_stand_in';

export interface StandInOptions {
  /** The gateway's settings from these variables (GATEWAY_PUBLIC_URL, GATEWAY_UPLOADS, ...). */
  env: NodeJS.ProcessEnv;
  resultsDir: string;
  /** The worker's settings the in-process quote runs with. */
  config: Config;
  /** Whether the quote takes local paths (as `media-worker quote` does) or only URLs (as the worker does). */
  allowLocalPaths: boolean;
  /** Tasks the account has, by id. */
  tasks?: Readonly<Record<string, TaskRecord>>;
}

export async function standInGateway(options: StandInOptions): Promise<GatewayApp> {
  const refused = async (): Promise<never> => {
    throw new Error('not reached by these tests');
  };
  const tasks = options.tasks ?? {};
  return buildApp({
    settings: gatewaySettingsFromEnv(options.env),
    resultsDir: options.resultsDir,
    resultsBaseUrl: options.env['RESULTS_BASE_URL'],
    upscaleResultLifetimeDays: 7,
    accounts: {} as never,
    ledger: {} as never,
    tasks: {} as never,
    // Without an Idempotency-Key header (these tests send none) a route never reaches the keys.
    idempotency: {} as never,
    service: {
      submit: refused,
      estimate: async (_account: string, job: Job) => {
        const quote = await quoteOnly(job, options.config, {
          taskId: 'stand-in',
          allowLocalPaths: options.allowLocalPaths,
        });
        return estimateView(job, quote as never, 100);
      },
    } as never,
    metrics: new GatewayMetrics(),
    logger: pino({ level: 'silent' }),
    progress: { get: () => undefined, forget: () => undefined, onMessage: () => undefined } as never,
    view: {
      accountOfKey: async (key: string) => (key === ACCOUNT_KEY ? ACCOUNT_ID : null),
      task: async (_account: string, id: string) => tasks[id] ?? null,
      onTask: () => undefined,
    } as never,
    webhooks: { account: async () => null } as never,
    webhookPolicy: { allowLoopback: false },
    notReadyReason: () => null,
  });
}

/** A request as a client sends it, with the account's key. */
export async function call(
  app: GatewayApp,
  method: 'GET' | 'POST',
  url: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: unknown }> {
  const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const reply = await app.inject({
    method,
    url,
    headers: {
      authorization: `Bearer ${ACCOUNT_KEY}`,
      ...(payload === undefined ? {} : { 'content-type': contentType }),
    },
    ...(payload === undefined ? {} : { payload }),
  });
  return { status: reply.statusCode, body: reply.json() };
}
