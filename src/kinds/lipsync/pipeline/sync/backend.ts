/**
 * The `sync-compatible` lip-sync backend: a provider speaking sync.so's v2 API. One POST
 * /v2/generate per task, under an Idempotency-Key derived from the task id (api.ts), retried with
 * the same key on 408/409/429 (after Retry-After), 5xx and timeouts; then GET /v2/generate/{id}
 * until COMPLETED, a failure, or the deadline. The output is downloaded through the safe fetcher
 * (size cap, no private addresses unless allowed) and measured before the job's path stores it:
 * a video with an audio stream, as long as the sync mode makes it from the inputs the quote measured.
 *
 * 400, 401 and 402 fail at once (LIPSYNC_FAILED) with a log line naming the cause. The key is
 * checked once (readiness): a refused key keeps the backend not ready, with the reason. A 402 (the
 * provider's account out of credit) would fail every later job the same way, so it makes the
 * backend not ready (jobs go to the next backend, or the host stops pulling lip-sync) until a
 * readiness check a while later asks the provider again (see OUT_OF_CREDIT_WAIT_MS).
 */
import { openAsBlob } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { ProcessingError, isExplainedFailure } from '../../../../errors.js';
import { definedFields } from '../../../../defined-fields.js';
import type { LipsyncModelId } from '../../../../jobs/index.js';
// The sync modes' output lengths are sync.so's documented semantics, the same as the in-process timeline's.
import { LIPSYNC_MODEL_IDS, lipsyncOutputSeconds } from '../../../../jobs/index.js';
import {
  callJson,
  displayUrl,
  localize,
  probeMedia,
  ProviderError,
  TransientProviderError,
  waitUntil,
  withRetry,
  type FetchOptions,
} from '../../../../media/index.js';
import type { SyncModelMap } from '../../settings.js';
import type {
  BackendReadiness,
  LipsyncBackend,
  LipsyncBackendOutcome,
  LipsyncBackendRequest,
} from '../backends/types.js';
import {
  classifyGeneration,
  describeFailure,
  durationTolerance,
  generateBody,
  generateOptions,
  generationSchema,
  idempotencyKey,
  SYNC_TRANSIENT_STATUSES,
  type Generation,
} from './api.js';

export interface SyncBackendOptions {
  baseUrl: string;
  apiKey?: string | undefined;
  models: SyncModelMap;
  pollIntervalMs: number;
  /** The safe fetcher's rules for the output download. */
  fetch: FetchOptions;
  ffprobePath?: string | undefined;
  /** One HTTP attempt's limit. */
  requestTimeoutMs?: number;
  /** First retry wait (doubling to `maxWaitMs`); tests shorten it. */
  retryDelayMs?: number;
  /**
   * The longest wait between two calls that a provider's Retry-After (or the backoff) can ask for:
   * 30 s. A longer Retry-After (a broken or hostile provider's 999999) is read as this.
   */
  maxWaitMs?: number;
  /** The first wait after a 402 before readiness asks the provider again (OUT_OF_CREDIT_WAIT_MS); tests shorten it. */
  outOfCreditWaitMs?: number;
  /** The clock the waits after a 402 are counted on; tests move it. */
  now?: () => number;
}

/**
 * After a 402, the backend is not ready for this long; then the next readiness check asks the
 * provider again. sync.so's API has no balance to read: the check (the key check's GET) tells that
 * the provider answers and takes the key, and a provider that answers 402 to it stays out. Ready
 * again, the next job tries; another 402 before a generation is accepted doubles the wait, up to
 * OUT_OF_CREDIT_MAX_WAIT_MS, so an account left empty costs a failed (refunded) job now and then,
 * not one per readiness interval.
 */
export const OUT_OF_CREDIT_WAIT_MS = 60_000;
export const OUT_OF_CREDIT_MAX_WAIT_MS = 30 * 60_000;

/** Statuses that no retry fixes, with what they mean for the operator's log line. */
const REFUSALS: Readonly<Record<number, string>> = {
  400: 'the provider refused the request',
  401: 'the provider refused the API key (MEDIA_WORKER_SYNC_API_KEY)',
  402: 'the provider account cannot pay for a generation',
};

export class SyncBackend implements LipsyncBackend {
  readonly name = 'sync-compatible' as const;
  readonly #opts: SyncBackendOptions;
  /** The key check's verdict once it was answered (a network failure is asked again). */
  #keyVerdict: BackendReadiness | undefined;
  /** Set by a 402: not ready before `askAt`, then until the provider answers a readiness check. */
  #outOfCredit: { reason: string; askAt: number } | undefined;
  /** The last wait after a 402; a generation accepted forgets it, another 402 doubles it. */
  #outOfCreditWaitMs: number | undefined;

  constructor(opts: SyncBackendOptions) {
    this.#opts = opts;
  }

  models(): readonly LipsyncModelId[] {
    return LIPSYNC_MODEL_IDS.filter((id) => this.#opts.models[id] !== null);
  }

  async readiness(signal?: AbortSignal): Promise<BackendReadiness> {
    if (this.#opts.apiKey === undefined) return { ready: false, reason: 'needs MEDIA_WORKER_SYNC_API_KEY' };
    // A refused key stays refused until a restart; out of credit is asked again once its wait is over.
    if (this.#keyVerdict?.ready === false) return this.#keyVerdict;
    const credit = this.#outOfCredit;
    if (credit !== undefined && this.#now() < credit.askAt) return { ready: false, reason: credit.reason };
    if (credit === undefined && this.#keyVerdict !== undefined) return this.#keyVerdict;
    // A generation id no one has: 404 says the key was accepted, 401 that it was not.
    try {
      await callJson(this.#url('v2/generate/media-worker-key-check'), generationSchema, {
        method: 'GET',
        headers: this.#headers(),
        timeoutMs: this.#opts.requestTimeoutMs ?? 15_000,
        signal: signal ?? new AbortController().signal,
        transientStatuses: SYNC_TRANSIENT_STATUSES,
      });
      this.#keyVerdict = { ready: true };
    } catch (err) {
      if (err instanceof ProviderError && err.status === 404) this.#keyVerdict = { ready: true };
      else if (err instanceof ProviderError && (err.status === 401 || err.status === 403)) {
        this.#keyVerdict = {
          ready: false,
          reason: `${displayUrl(this.#opts.baseUrl)} refused MEDIA_WORKER_SYNC_API_KEY (HTTP ${err.status})`,
        };
      } else if (err instanceof ProviderError && err.status === 402) {
        return this.#outOfCreditNow(err, 'to the readiness check');
      } else return { ready: false, reason: (err as Error).message };
    }
    if (this.#keyVerdict.ready) this.#outOfCredit = undefined;
    return this.#keyVerdict;
  }

  async run(req: LipsyncBackendRequest): Promise<LipsyncBackendOutcome> {
    const providerModel = this.#opts.models[req.model];
    if (providerModel === null)
      throw new ProcessingError(`sync-compatible does not serve ${req.model} (MEDIA_WORKER_SYNC_MODELS)`);
    if (this.#opts.apiKey === undefined) throw new ProcessingError('sync-compatible needs MEDIA_WORKER_SYNC_API_KEY');
    const deadline = Date.now() + req.timeLimitMs;
    const key = idempotencyKey(req.taskId);
    const maxWaitMs = this.#opts.maxWaitMs ?? 30_000;
    const call = {
      timeoutMs: this.#opts.requestTimeoutMs ?? 30_000,
      signal: req.signal,
      transientStatuses: SYNC_TRANSIENT_STATUSES,
    };
    const retry = {
      deadline,
      signal: req.signal,
      initialDelayMs: this.#opts.retryDelayMs ?? Math.min(2_000, this.#opts.pollIntervalMs),
      maxDelayMs: maxWaitMs,
      onRetry: (err: TransientProviderError, attempt: number, delayMs: number) =>
        req.logger.warn(
          { attempt, delayMs, status: err.status, err },
          'lip-sync provider busy; retrying with the same Idempotency-Key',
        ),
    };
    const fail = this.#failure(req);

    let paced: number | undefined;
    const pace = (ms: number): void => {
      paced = ms;
    };
    req.onProgress({ stage: 'submitting' });
    const options = generateOptions(req.syncMode, req.activeSpeaker);
    const upload = !isHttpUrl(req.videoSource) || !isHttpUrl(req.audioSource);
    let generation = await withRetry(
      async () =>
        callJson(this.#url('v2/generate'), generationSchema, {
          ...call,
          method: 'POST',
          headers: { ...this.#headers(), 'idempotency-key': key },
          onRetryAfter: pace,
          // Local files (the command line) go up as the documented multipart form; URLs as JSON.
          body: upload
            ? await uploadForm(providerModel, req, options)
            : generateBody(providerModel, req.videoSource, req.audioSource, options),
        }),
      retry,
    ).catch(fail);
    // The account could pay for this one: a later 402 waits the first wait again.
    this.#outOfCreditWaitMs = undefined;
    req.logger.info(
      { generationId: generation.id, providerModel, status: generation.status, upload },
      'lip-sync provider accepted the generation',
    );

    const generationId = generation.id;
    const statusUrl = this.#url(`v2/generate/${encodeURIComponent(generationId)}`);
    for (;;) {
      const kind = classifyGeneration(generation.status);
      if (kind === 'completed') break;
      if (kind === 'failure') throw fail(new ProviderError(`the generation ended ${describeFailure(generation)}`));
      req.onProgress({ stage: `provider ${generation.status.toLowerCase()}` });
      // A provider that paces its polling with Retry-After is asked no sooner than it says (up to maxWaitMs).
      const wait = Math.max(this.#opts.pollIntervalMs, Math.min(paced ?? 0, maxWaitMs));
      if (paced !== undefined)
        req.logger.debug({ waitMs: wait }, 'lip-sync provider asked to poll later (Retry-After)');
      paced = undefined;
      if (!(await waitUntil(wait, deadline, req.signal))) {
        throw fail(
          new ProviderError(`left the generation ${generation.status} past the ${seconds(req.timeLimitMs)} s limit`),
        );
      }
      generation = await withRetry(
        () =>
          callJson(statusUrl, generationSchema, {
            ...call,
            method: 'GET',
            headers: this.#headers(),
            onRetryAfter: pace,
          }),
        retry,
      ).catch(fail);
      // Another generation's answer (its output included) is not this task's.
      if (generation.id !== generationId)
        throw fail(
          new ProviderError(
            `answered generation ${JSON.stringify(generation.id)} when asked for ${JSON.stringify(generationId)}`,
          ),
        );
    }
    const outputUrl = generation.outputUrl;
    if (outputUrl === null || outputUrl === undefined || !isHttpUrl(outputUrl))
      throw fail(new ProviderError(`reported COMPLETED without an output URL (${JSON.stringify(outputUrl ?? null)})`));

    req.onProgress({ stage: 'downloading' });
    const durationSeconds = await this.#fetchOutput(outputUrl, req, generation);
    return {
      outputPath: req.outputPath,
      durationSeconds,
      details: { backend: this.name, generationId: generation.id, providerModel },
    };
  }

  /** The output into the job directory through the safe fetcher, checked, then moved to `outputPath`. */
  async #fetchOutput(url: string, req: LipsyncBackendRequest, generation: Generation): Promise<number> {
    const dir = path.join(req.dir, 'provider-output');
    await mkdir(dir, { recursive: true });
    let local: string;
    try {
      local = (await localize(url, 'video', { ...this.#opts.fetch, dir, signal: req.signal })).path;
    } catch (err) {
      if (req.signal.aborted) throw err;
      throw new ProcessingError(`Could not download the provider's output ${displayUrl(url)}: ${withCause(err)}`, {
        cause: err,
      });
    }
    let info;
    try {
      // Stored as the spec's MP4 result: another container (a Matroska, a QuickTime file) would be misnamed.
      info = await probeMedia(local, {
        ...definedFields({ ffprobePath: this.#opts.ffprobePath }),
        signal: req.signal,
        accept: ['mp4', 'm4v'],
      });
    } catch (err) {
      if (req.signal.aborted) throw err;
      throw new ProcessingError(
        `The provider's output (generation ${generation.id}) is not an MP4 video we can read: ${(err as Error).message}`,
        { cause: err },
      );
    }
    if (info.video === undefined)
      throw new ProcessingError(`The provider's output (generation ${generation.id}) has no video stream`);
    if (info.audio === undefined)
      throw new ProcessingError(
        `The provider's output (generation ${generation.id}) has no audio stream: it does not carry the job's audio`,
      );
    const expected = lipsyncOutputSeconds(req.syncMode, req.videoInfo.durationSeconds, req.audioInfo.durationSeconds);
    if (Math.abs(info.durationSeconds - expected) > durationTolerance(expected)) {
      throw new ProcessingError(
        `The provider's output (generation ${generation.id}) lasts ${info.durationSeconds.toFixed(2)} s but ${req.syncMode} of these inputs makes ${expected.toFixed(2)} s`,
      );
    }
    await rename(local, req.outputPath);
    return info.durationSeconds;
  }

  /** Provider errors become the job's LIPSYNC_FAILED (a ProcessingError), with a log line naming a refusal's cause. */
  #failure(req: LipsyncBackendRequest): (err: unknown) => never {
    return (err: unknown) => {
      if (req.signal.aborted) throw req.signal.reason ?? err;
      if (isExplainedFailure(err)) throw err;
      const refusal = err instanceof ProviderError && err.status !== undefined ? REFUSALS[err.status] : undefined;
      if (refusal !== undefined && err instanceof ProviderError) {
        req.logger.error({ status: err.status, errorCode: err.errorCode, err }, `lip-sync provider: ${refusal}`);
        // A key revoked since the start-up check would fail every later job here: the backend stops
        // being ready (the host stops pulling lip-sync through it) until a restart with a good key.
        if (err.status === 401)
          this.#keyVerdict = {
            ready: false,
            reason: `${displayUrl(this.#opts.baseUrl)} refused MEDIA_WORKER_SYNC_API_KEY (HTTP 401) during a job`,
          };
        // So would an account out of credit: not ready until a readiness check after a wait.
        if (err.status === 402) this.#outOfCreditNow(err, 'during a job');
      }
      throw new ProcessingError(
        `The lip-sync provider ${refusal === undefined ? 'failed' : `failed (${refusal})`}: ${(err as Error).message}`,
        { cause: err },
      );
    };
  }

  /**
   * The provider answered 402: not ready for the next wait (the first, or twice the last while no
   * generation was accepted since). 402s of jobs that ran together start one wait, not several.
   */
  #outOfCreditNow(err: ProviderError, when: string): BackendReadiness {
    const now = this.#now();
    const current = this.#outOfCredit;
    if (current !== undefined && now < current.askAt) return { ready: false, reason: current.reason };
    const first = this.#opts.outOfCreditWaitMs ?? OUT_OF_CREDIT_WAIT_MS;
    const waitMs =
      this.#outOfCreditWaitMs === undefined ? first : Math.min(OUT_OF_CREDIT_MAX_WAIT_MS, this.#outOfCreditWaitMs * 2);
    this.#outOfCreditWaitMs = waitMs;
    const askAt = now + waitMs;
    const reason = `out of credit (HTTP 402 ${when}: ${err.message}); readiness asks the provider again from ${new Date(askAt).toISOString()}`;
    this.#outOfCredit = { reason, askAt };
    return { ready: false, reason };
  }

  #now(): number {
    return (this.#opts.now ?? Date.now)();
  }

  #headers(): Record<string, string> {
    return { 'x-api-key': this.#opts.apiKey ?? '' };
  }

  #url(relative: string): string {
    const base = this.#opts.baseUrl.endsWith('/') ? this.#opts.baseUrl : `${this.#opts.baseUrl}/`;
    return new URL(relative, base).toString();
  }
}

/** The fetcher's message with its cause's (a refused address, a status), which it keeps apart. */
function withCause(err: unknown): string {
  const message = (err as Error).message;
  const cause = (err as Error).cause;
  return cause instanceof Error && !message.includes(cause.message) ? `${message} (${cause.message})` : message;
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? String(ms / 1000) : (ms / 1000).toFixed(1);
}

function isHttpUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/** sync.so's multipart form: the two files, the model and the options as JSON. */
async function uploadForm(
  model: string,
  req: LipsyncBackendRequest,
  options: ReturnType<typeof generateOptions>,
): Promise<FormData> {
  const form = new FormData();
  form.append('model', model);
  form.append('options', JSON.stringify(options));
  form.append('video', await openAsBlob(req.videoPath), path.basename(req.videoPath));
  form.append('audio', await openAsBlob(req.audioPath), path.basename(req.audioPath));
  return form;
}
