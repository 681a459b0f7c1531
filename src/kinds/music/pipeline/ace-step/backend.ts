/**
 * The `ace-step` backend: an ACE-Step 1.5 API server run beside the worker on the GPU host
 * (vocals, lyrics in many languages, 10 s to 10 min, a batch of 2). Submit, poll until status 1
 * or 2 or the deadline, then download each song's /v1/audio file. The server is the operator's own,
 * on a configured (usually loopback) address: its audio URLs are accepted only on that origin.
 */
import { ProcessingError, isExplainedFailure } from '../../../../jobs/index.js';
import {
  callJson,
  displayUrl,
  ProviderError,
  TransientProviderError,
  waitUntil,
  withRetry,
  type FetchOptions,
} from '../../../../media/index.js';
import { downloadAudio } from '../remote/download.js';
import type { GenerateContext, MusicBackend, MusicRequest, RawSong, Readiness } from '../types.js';
import {
  ACESTEP_MAX_SECONDS,
  healthAnswer,
  queryAnswer,
  releaseAnswer,
  releaseBody,
  resultList,
  type AceStepResult,
} from './api.js';
import { definedFields } from '../../../../defined-fields.js';

export interface AceStepBackendOptions {
  baseUrl: string;
  apiKey?: string;
  deadlineMs: number;
  pollIntervalMs: number;
  fetch: FetchOptions;
  requestTimeoutMs?: number;
}

/** 503 while models load; 429 when its queue is full. */
const TRANSIENT = [429, 503] as const;

export class AceStepBackend implements MusicBackend {
  readonly name = 'ace-step';
  readonly capabilities = { vocals: true, lyrics: true, writesLyrics: true, maxSeconds: ACESTEP_MAX_SECONDS };
  readonly #opts: AceStepBackendOptions;

  constructor(opts: AceStepBackendOptions) {
    this.#opts = opts;
  }

  #url(path: string): string {
    return new URL(path, this.#opts.baseUrl.endsWith('/') ? this.#opts.baseUrl : `${this.#opts.baseUrl}/`).toString();
  }

  #call(signal: AbortSignal): {
    headers: Record<string, string>;
    timeoutMs: number;
    signal: AbortSignal;
    transientStatuses: readonly number[];
  } {
    return {
      headers: this.#opts.apiKey === undefined ? {} : { authorization: `Bearer ${this.#opts.apiKey}` },
      timeoutMs: this.#opts.requestTimeoutMs ?? 30_000,
      signal,
      transientStatuses: TRANSIENT,
    };
  }

  async readiness(signal?: AbortSignal): Promise<Readiness> {
    try {
      const answer = await callJson(this.#url('health'), healthAnswer, {
        ...this.#call(signal ?? new AbortController().signal),
        method: 'GET',
        timeoutMs: 5_000,
      });
      return answer.code === 200 && answer.data?.status === 'ok'
        ? { ready: true }
        : {
            ready: false,
            reason: `ACE-Step server at ${displayUrl(this.#opts.baseUrl)} is not healthy (${answer.error ?? answer.data?.status ?? answer.code})`,
          };
    } catch (err) {
      return {
        ready: false,
        reason: `ACE-Step server at ${displayUrl(this.#opts.baseUrl)} does not answer /health: ${(err as Error).message}`,
      };
    }
  }

  async generate(request: MusicRequest, ctx: GenerateContext): Promise<RawSong[]> {
    const deadline = Date.now() + this.#opts.deadlineMs;
    const call = this.#call(ctx.signal);
    const retry = {
      deadline,
      signal: ctx.signal,
      initialDelayMs: Math.min(2_000, this.#opts.pollIntervalMs),
      maxDelayMs: 30_000,
      onRetry: (err: TransientProviderError, attempt: number, delayMs: number) =>
        ctx.logger.warn({ attempt, delayMs, err }, 'ACE-Step busy; retrying'),
    };
    const fail = (message: string, cause?: unknown): ProcessingError =>
      new ProcessingError(`ACE-Step ${message}`, definedFields({ cause }));
    const rethrow = (err: unknown): never => {
      if (ctx.signal.aborted) throw ctx.signal.reason ?? err;
      if (isExplainedFailure(err)) throw err;
      throw fail((err as Error).message, err);
    };

    ctx.onProgress({ stage: 'submitting' });
    const taskId = await withRetry(async () => {
      const a = await callJson(this.#url('release_task'), releaseAnswer, {
        ...call,
        method: 'POST',
        body: releaseBody(request),
      });
      if (a.code !== 200 || a.data === null || a.data === undefined)
        throw new ProviderError(`refused the task (code ${a.code}: ${a.error ?? 'no message'})`);
      return a.data.task_id;
    }, retry).catch(rethrow);
    ctx.logger.info({ aceStepTaskId: taskId }, 'ACE-Step task submitted');

    let results: AceStepResult[] | undefined;
    for (;;) {
      const item = await withRetry(async () => {
        const a = await callJson(this.#url('query_result'), queryAnswer, {
          ...call,
          method: 'POST',
          body: { task_id_list: [taskId] },
        });
        const found = a.code === 200 ? a.data?.find((d) => d.task_id === taskId) : undefined;
        if (found === undefined)
          throw new ProviderError(
            `query_result does not know task ${taskId} (code ${a.code}: ${a.error ?? 'no entry'})`,
          );
        return found;
      }, retry).catch(rethrow);
      if (item.status === 2) throw fail(`reported the task failed${failureDetail(item.result)}`);
      if (item.status === 1) {
        results = parseResults(item.result);
        break;
      }
      if (item.status !== 0) throw fail(`answered an unknown status ${item.status}`);
      const running = runningEntry(item.result);
      ctx.onProgress({
        stage: running?.stage ? `running: ${running.stage}` : 'queued or running',
        ...(typeof running?.progress === 'number'
          ? { done: Math.round(Math.min(1, Math.max(0, running.progress)) * 100), total: 100, unit: '%' }
          : {}),
      });
      if (!(await waitUntil(this.#opts.pollIntervalMs, deadline, ctx.signal))) {
        throw fail(`left the task unfinished past the ${Math.round(this.#opts.deadlineMs / 1000)} s deadline`);
      }
    }
    const withAudio = (results ?? []).filter((r) => r.file !== '');
    if (withAudio.length < request.songs)
      throw fail(`succeeded with ${withAudio.length} audio files instead of ${request.songs}`);
    const chosen = withAudio.slice(0, request.songs);
    const origin = new URL(this.#opts.baseUrl).origin;
    ctx.onProgress({ stage: 'downloading', done: 0, total: chosen.length, unit: 'songs' });
    // The server is the operator's, usually on loopback: its own origin is allowed, nothing else.
    const fetchOptions: FetchOptions = { ...this.#opts.fetch, allowHttp: true, allowPrivate: true };
    return Promise.all(
      chosen.map(async (r, i): Promise<RawSong> => {
        const url = new URL(r.file, `${origin}/`);
        if (url.origin !== origin) throw fail(`returned an audio URL on another host (${displayUrl(url.toString())})`);
        const path = await downloadAudio(url.toString(), `acestep-song-${i + 1}`, ctx, fetchOptions);
        return {
          audio: { kind: 'file', path },
          ...(r.lyrics && !request.instrumental ? { lyrics: r.lyrics } : {}),
          ...(r.metas?.genres ? { tags: r.metas.genres } : {}),
        };
      }),
    );
  }
}

/** The entry of an unfinished task (its `stage` and `progress` 0..1), when the result carries one. */
function runningEntry(text: string | null | undefined): AceStepResult | undefined {
  try {
    const parsed = resultList.safeParse(JSON.parse(text ?? ''));
    return parsed.success ? parsed.data[0] : undefined;
  } catch {
    return undefined;
  }
}

/** The failed entry's `error` when the result says one, else the start of the raw text. */
function failureDetail(text: string | null | undefined): string {
  if (text === null || text === undefined || text === '') return '';
  try {
    const parsed = resultList.safeParse(JSON.parse(text));
    const error = parsed.success ? parsed.data.find((r) => r.error)?.error : undefined;
    if (error) return `: ${error.slice(0, 300)}`;
  } catch {
    // not JSON: shown as it is
  }
  return `: ${text.slice(0, 200)}`;
}

function parseResults(text: string | null | undefined): AceStepResult[] {
  let json: unknown;
  try {
    json = JSON.parse(text ?? '');
  } catch {
    throw new ProcessingError('ACE-Step reported success with a result that is not JSON');
  }
  const parsed = resultList.safeParse(json);
  if (!parsed.success)
    throw new ProcessingError(
      `ACE-Step reported success with an unexpected result (${parsed.error.issues[0]?.path.join('.')}: ${parsed.error.issues[0]?.message})`,
    );
  return parsed.data;
}
