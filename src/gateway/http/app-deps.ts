/**
 * What the HTTP app is built from (buildApp, app.ts), the signed links to the files it serves, and
 * what every route file (routes/) is registered with: a module of its own so that the routes take
 * the same deps without importing app.ts back.
 */
import type { Logger } from 'pino';
import type { ObjectStore } from '../../protocol/index.js';
import type { GatewayMetrics } from '../monitoring/metrics.js';
import type { ProgressBoard } from '../progress-board.js';
import type { GatewayService } from '../service.js';
import type { GatewaySettings } from '../settings.js';
import type { Accounts } from '../store/accounts.js';
import type { IdempotencyKeys } from '../store/idempotency-keys.js';
import type { Ledger } from '../store/ledger.js';
import type { Tasks } from '../store/tasks.js';
import type { LinkSigner } from '../results/links.js';
import type { PollView } from '../poll-view/poll-view.js';
import type { WebhookStore } from '../webhooks/store.js';
import type { IdempotentRouteDeps } from './idempotent-route.js';

export interface AppDeps {
  settings: GatewaySettings;
  resultsDir: string;
  resultsBaseUrl: string | undefined;
  /** RESULTS_STORE=s3 or upload-url: the bucket the results under /results/ are streamed from (bucket-files.ts). */
  resultsBucket?: () => Promise<ObjectStore>;
  /** The worker's RESULTS_UPSCALE_LIFETIME_DAYS: upscale result links expire with their files. */
  upscaleResultLifetimeDays: number;
  accounts: Accounts;
  ledger: Ledger;
  tasks: Tasks;
  service: GatewayService;
  metrics: GatewayMetrics;
  logger: Logger;
  progress: ProgressBoard;
  /** Tasks, balances and API keys as polls see them (poll-view/poll-view.ts). */
  view: PollView;
  /** Accounts' webhook secrets and defaults, and each task's webhook state (src/gateway/webhooks/). */
  webhooks: WebhookStore;
  /** Each account's Idempotency-Keys (../idempotency.ts). */
  idempotency: IdempotencyKeys;
  /** GATEWAY_WEBHOOK_ALLOW_LOOPBACK, as the webhooks' address policy. */
  webhookPolicy: { allowLoopback: boolean };
  /** null when ready, else why not. */
  notReadyReason(): string | null;
}

/** Signs links to files this gateway serves: those under `base`. */
export interface Links {
  signer: LinkSigner;
  base: string;
  upscaleResultLifetimeDays: number;
}

/** What a route file is registered with. */
export interface RouteContext {
  deps: AppDeps;
  /** The signed links to served files; undefined when this gateway serves none. */
  links: Links | undefined;
  /** A POST that charges or changes state is safe to retry with an Idempotency-Key; a claim holds as long as a request may take. */
  once: IdempotentRouteDeps;
}
