/**
 * What a job kind is, as the contract sees it (docs/architecture.md, "A job kind is one
 * descriptor"): the shape of the one typed descriptor each kind has (src/jobs/kinds/<kind>/),
 * holding what used to be a branch per kind in each concern (input parsing in the spec's order,
 * schemas, routes, price, quote, the gateway's re-check of a quote, result URLs and their lifetime,
 * failure codes, setting defaults). Pure: the gateway imports it. What runs a kind (pipeline,
 * readiness, warm-up) is its runtime half, in src/app/kinds/.
 *
 * Generic, and so naming no kind: a descriptor is typed by its kind's bundle of types (KindTypes,
 * in its room's types.ts). The registry (kinds/index.ts) maps each kind to its bundle
 * (`KindTypeMap`, one line per kind) and is typed `{ [K in JobKind]: KindContract<K> }`, so a kind
 * missing from it, or a descriptor whose functions disagree with its kind's types, does not compile.
 */
import type { z } from 'zod';
import type { ErrorCode } from '../errors.js';
import type { QuoteDeps, QuotePolicyOf } from './quote-types.js';

/** What a kind's descriptor is typed by: its name, its job (and so its model ids), its quote, what processing receives, its result. */
export interface KindTypes {
  kind: string;
  job: { model: string };
  quote: unknown;
  quoted: unknown;
  result: unknown;
}

/** A JSON object as it arrived; values are still untrusted. */
export type Fields = Readonly<Record<string, unknown>>;

/** `input`: the quote's echo as checked, without fields the schema does not know (it is shown to the customer). */
export type QuoteVerdict = { ok: true; input: Record<string, unknown> } | { ok: false; reason: string };

/** Per-kind defaults of the settings that take one value per kind (`image=1,video=1,...`). */
export interface KindSettingDefaults {
  /** WORKER_CONCURRENCY: jobs of the kind at once on a host; 0: not served unless asked. */
  concurrency: number;
  /** WORKER_WATCHDOG_MS: longest processing time. */
  watchdogMs: number;
  /** WORKER_MAX_QUEUE_AGE_MS: longest wait in the jobs stream. */
  maxQueueAgeMs: number;
  /** GATEWAY_PENDING_LIFETIME_MS: longest time a task stays pending at the gateway. */
  pendingLifetimeMs: number;
}

/** A spec tool endpoint (`POST /api/v1/tools/<name>`) whose flat body is a kind's job, `J`. */
export interface ToolDescriptor<J> {
  name: string;
  /** The field that tells its body apart from the other tools' (an estimate's body has no model): `image_url`. */
  marker: string;
  /** The flat body as the job, checked in the spec's table order. */
  parse(body: Fields): J;
  /** The success status the spec gives the endpoint. */
  status: 200 | 202;
  /** What the accepted response adds to the short task (spec 2.2): see gateway/api-views.ts. */
  echo: 'input' | 'poll-url-and-duration';
  /** The route's OpenAPI operation. */
  operationId: string;
  summary: string;
  /** Its body and its success response's `data`, OpenAPI 3.0 schema objects. */
  body: Record<string, unknown>;
  submitted: Record<string, unknown>;
}

/** The kind's part of the OpenAPI document (OpenAPI 3.0 schema objects; the gateway assembles them). */
export interface KindOpenApi {
  /**
   * Its `{model, input}` body as a named component: a variant of POST /api/v1/generate's body when
   * the unified endpoint takes it (`first`: listed first), and of POST /api/v1/estimate's always.
   */
  unified: { name: string; input: Record<string, unknown>; first?: boolean };
  /** Its completed task's `result`, closed so that each kind's result matches exactly one branch. */
  result: Record<string, unknown>;
}

/**
 * The descriptor of a kind typed by `T` (its KindTypes). `P`: the quote policy its `quote` reads,
 * the shared rules by default; a kind with limits and cost figures of its own widens it with its
 * part (`QuotePolicyOf<K> & { kinds: { [kind]: ItsPolicy } }`), and the registry hands
 * every kind the whole policy, which holds every part.
 */
export interface KindDescriptor<T extends KindTypes, P = QuotePolicyOf<T['kind']>> {
  kind: T['kind'];
  /** How people call it in messages and docs: `image upscale`, `video upscale`. */
  label: string;
  /** Model ids of the kind, the default first. */
  models: readonly [T['job']['model'], ...T['job']['model'][]];
  /** The id a completed task reports, where not the submitted one (spec 2.3: music). */
  reportedModel?: string;
  /** The `mediaType` its terminal events carry (spec 2.3: music). */
  mediaType?: string;
  /** Whether POST /api/v1/generate takes it (a kind may have only its tool endpoint: spec 1.5, 4.1). */
  onGenerate: boolean;
  /** Its `input`, field by field in the spec's order: the first failing check wins. */
  parse(input: Fields, model: T['job']['model']): T['job'];
  tool?: ToolDescriptor<T['job']>;
  /** The least any job like this one costs, known before anything is fetched. */
  minimumCredits(job: T['job']): number;
  /** Fetch, probe, check and price (no processing); with a policy, the work limits and the estimate too. */
  quote(job: T['job'], deps: QuoteDeps, signal?: AbortSignal, policy?: P): Promise<T['quoted']>;
  /** The gateway's check of a worker's quote: the echo is the job asked, the price the price list's for its figures. */
  recheck(job: T['job'], quote: unknown): QuoteVerdict;
  /**
   * Zod schemas of its job message, quote reply and result, from which docs/schemas/ is generated
   * (their inferred types are compared with the kind's types by test/protocol/wire-schemas.test.ts).
   */
  schemas: { job: z.ZodType; quote: z.ZodType; result: z.ZodType<T['result']>; resultTitle: string };
  /** Every file URL its result holds (each must lie under the task's own results folder). */
  resultUrls(result: T['result']): string[];
  /** How long a result lives (and its links work): days, or the upscale setting (RESULTS_UPSCALE_LIFETIME_DAYS). */
  resultLifetimeDays: number | 'upscale-setting';
  /**
   * Its processing failure code, how a failure that says nothing of its own opens its message, and
   * the code of a submission the ledger did not confirm, where the spec gives the kind one (else SUBMIT_FAILED).
   */
  failure: { code: ErrorCode; opening: string; submit?: ErrorCode };
  settings: KindSettingDefaults;
  openapi: KindOpenApi;
}
