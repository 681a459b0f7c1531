/**
 * The `suno-compatible` backend: an upstream provider speaking the Suno-style API. Submit, then
 * poll record-info until SUCCESS (the only final state that counts), a failure state, or the
 * deadline; rate limits and maintenance (429/430/455) and timeouts are retried with backoff
 * within the deadline. Both songs' audio (and covers) are downloaded at once through the safe
 * fetcher: provider URLs expire, ours live 14 days.
 */
import { ProcessingError, isExplainedFailure } from '../../../../jobs/index.js';
import {
  callJson,
  ProviderError,
  TransientProviderError,
  waitUntil,
  withRetry,
  type FetchOptions,
} from '../../../../media/index.js';
import { downloadAudio, downloadImage } from '../remote/download.js';
import type { GenerateContext, MusicBackend, MusicRequest, RawSong, Readiness } from '../types.js';
import {
  classifyStatus,
  generateBody,
  recordAnswer,
  submitAnswer,
  SUNO_TRANSIENT_CODES,
  usableAudioUrl,
  type SunoSong,
} from './api.js';
import { definedFields } from '../../../../defined-fields.js';

export interface SunoBackendOptions {
  baseUrl?: string;
  apiKey?: string;
  model: string;
  callbackUrl?: string;
  deadlineMs: number;
  pollIntervalMs: number;
  fetch: FetchOptions;
  /** One HTTP attempt's limit. */
  requestTimeoutMs?: number;
}

const SONGS = 2;

export class SunoBackend implements MusicBackend {
  readonly name = 'suno-compatible';
  readonly capabilities = { vocals: true, lyrics: true, writesLyrics: true, maxSeconds: 480 };
  readonly #opts: SunoBackendOptions;

  constructor(opts: SunoBackendOptions) {
    this.#opts = opts;
  }

  async readiness(): Promise<Readiness> {
    const missing = [
      this.#opts.baseUrl === undefined ? 'MEDIA_WORKER_SUNO_BASE_URL' : '',
      this.#opts.apiKey === undefined ? 'MEDIA_WORKER_SUNO_API_KEY' : '',
    ].filter(Boolean);
    return missing.length === 0
      ? { ready: true }
      : { ready: false, reason: `suno-compatible needs ${missing.join(' and ')}` };
  }

  async generate(request: MusicRequest, ctx: GenerateContext): Promise<RawSong[]> {
    const { baseUrl, apiKey } = this.#opts;
    if (baseUrl === undefined || apiKey === undefined)
      throw new ProcessingError(((await this.readiness()) as { reason: string }).reason);
    const deadline = Date.now() + this.#opts.deadlineMs;
    const call = {
      headers: { authorization: `Bearer ${apiKey}` },
      timeoutMs: this.#opts.requestTimeoutMs ?? 30_000,
      signal: ctx.signal,
      transientStatuses: SUNO_TRANSIENT_CODES,
    };
    const retry = {
      deadline,
      signal: ctx.signal,
      initialDelayMs: Math.min(2_000, this.#opts.pollIntervalMs),
      maxDelayMs: 60_000,
      onRetry: (err: TransientProviderError, attempt: number, delayMs: number) =>
        ctx.logger.warn({ attempt, delayMs, err }, 'music provider busy; retrying'),
    };
    const fail = (message: string, cause?: unknown): ProcessingError =>
      new ProcessingError(`The Suno-style provider ${message}`, definedFields({ cause }));

    ctx.onProgress({ stage: 'submitting' });
    const submitted = await withRetry(async () => {
      const answer = await callJson(new URL('api/v1/generate', withSlash(baseUrl)).toString(), submitAnswer, {
        ...call,
        method: 'POST',
        body: generateBody(request, this.#opts.model, this.#opts.callbackUrl),
      });
      if ((SUNO_TRANSIENT_CODES as readonly number[]).includes(answer.code))
        throw new TransientProviderError(`generate answered code ${answer.code}: ${answer.msg ?? ''}`);
      if (answer.code !== 200 || answer.data?.taskId === undefined)
        throw new ProviderError(`refused the task (code ${answer.code}: ${answer.msg ?? 'no message'})`);
      return answer.data.taskId;
    }, retry).catch(rethrow(ctx.signal, fail));
    ctx.logger.info({ providerTaskId: submitted }, 'music provider task submitted');

    const recordUrl = new URL('api/v1/generate/record-info', withSlash(baseUrl));
    recordUrl.searchParams.set('taskId', submitted);
    let status = 'PENDING';
    let songs: SunoSong[] | undefined;
    for (;;) {
      const answer = await withRetry(async () => {
        const a = await callJson(recordUrl.toString(), recordAnswer, { ...call, method: 'GET' });
        if ((SUNO_TRANSIENT_CODES as readonly number[]).includes(a.code))
          throw new TransientProviderError(`record-info answered code ${a.code}`);
        if (a.code !== 200 || a.data === null || a.data === undefined)
          throw new ProviderError(`record-info answered code ${a.code}: ${a.msg ?? 'no data'}`);
        return a.data;
      }, retry).catch(rethrow(ctx.signal, fail));
      status = answer.status;
      const kind = classifyStatus(status);
      if (kind === 'failure') throw fail(`reported ${status}${answer.errorMessage ? `: ${answer.errorMessage}` : ''}`);
      if (kind === 'success') {
        songs = answer.response?.sunoData ?? [];
        break;
      }
      ctx.onProgress({ stage: `provider ${status.toLowerCase()}` });
      if (!(await waitUntil(this.#opts.pollIntervalMs, deadline, ctx.signal))) {
        throw fail(`left the task in ${status} past the ${Math.round(this.#opts.deadlineMs / 1000)} s deadline`);
      }
    }
    if (songs.length < SONGS) throw fail(`reported SUCCESS with ${songs.length} songs instead of ${SONGS}`);
    const chosen = songs.slice(0, SONGS);
    for (const [i, s] of chosen.entries()) {
      if (!usableAudioUrl(s.audioUrl))
        throw fail(
          `reported SUCCESS without a usable audio URL for song ${i + 1} (${JSON.stringify(s.audioUrl ?? null)})`,
        );
    }
    ctx.onProgress({ stage: 'downloading', done: 0, total: SONGS, unit: 'songs' });
    return Promise.all(
      chosen.map(async (s, i): Promise<RawSong> => {
        const [audioPath, imagePath] = await Promise.all([
          downloadAudio(s.audioUrl as string, `provider-song-${i + 1}`, ctx, this.#opts.fetch),
          downloadImage(s.imageUrl ?? undefined, `provider-cover-${i + 1}`, ctx, this.#opts.fetch),
        ]);
        return {
          audio: { kind: 'file', path: audioPath },
          ...(s.title ? { title: s.title } : {}),
          ...(s.tags ? { tags: s.tags } : {}),
          ...(s.prompt ? { lyrics: s.prompt } : {}),
          ...(imagePath === undefined ? {} : { imagePath }),
        };
      }),
    );
  }
}

function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}

/** Cancellation keeps its reason; provider errors become ProcessingErrors (the job's GENERATION_FAILED). */
function rethrow(
  signal: AbortSignal,
  fail: (message: string, cause?: unknown) => ProcessingError,
): (err: unknown) => never {
  return (err: unknown) => {
    if (signal.aborted) throw signal.reason ?? err;
    if (isExplainedFailure(err)) throw err;
    throw fail((err as Error).message, err);
  };
}
