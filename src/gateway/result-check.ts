/**
 * A completed event's result checked before it is shown or signed. A worker writes results under
 * `<RESULTS_BASE_URL>/<kind>/<task id>/<name>.<ext>` (src/worker/results.ts), so that is the only
 * place a task's result may point: a result naming anything else (another task's result, an
 * upload, another host) comes from a worker that lies, and the task fails with its refund instead
 * (docs/contract.md, "What the gateway checks"). Pure but for the report of the security event.
 */
import { pathToFileURL } from 'node:url';
import { KIND_FAILURE_CODE, KINDS, isModelId, reportedModel, type JobKind } from '../jobs/index.js';
import { resultUrl, type TerminalEvent } from '../protocol/index.js';
import type { SecurityEventReporter } from './security-events.js';

export type ResultVerdict = { ok: true } | { ok: false; reason: string };

/** One file name as the worker's result store makes them (resultRelativePath). */
const FILE_NAME = /^[A-Za-z0-9_-]{1,64}\.[a-z0-9]{1,8}$/;


/** Where results are published: RESULTS_BASE_URL, else the file:// URL of RESULTS_DIR (development). */
export function resultsBase(publicBaseUrl: string | undefined, resultsDir: string): string {
  return publicBaseUrl ?? pathToFileURL(resultsDir).href;
}

/** `<base>/<kind>/<task id>/`: the only folder a task's result may reference. */
export function taskResultsPrefix(base: string, kind: JobKind, taskId: string): string {
  return `${resultUrl(base, [kind, taskId])}/`;
}

/** The task as the gateway stored it: what the event is checked against. */
export interface CheckedTask {
  id: string;
  kind: JobKind;
  model: string;
}

/** Whether a completed event's result is its task's kind's shape with every URL a file under its task's prefix. */
export function checkResult(event: TerminalEvent, task: CheckedTask, base: string): ResultVerdict {
  const model = isModelId(task.model) ? reportedModel(task.model) : task.model;
  if (event.model !== model) return { ok: false, reason: `the event's model ${JSON.stringify(event.model)} is not the task's ${JSON.stringify(model)}` };
  const read = readResult(task.kind, event.result);
  if ('issue' in read) return { ok: false, reason: `the result is not a ${task.kind} result (${read.issue?.path.join('.') || 'result'}: ${read.issue?.message ?? 'invalid'})` };
  const prefix = taskResultsPrefix(base, task.kind, task.id);
  const { urls } = read;
  const stray = urls.find((url) => !url.startsWith(prefix) || !FILE_NAME.test(url.slice(prefix.length)));
  if (stray !== undefined) return { ok: false, reason: `the result references ${describe(stray)}, outside the task's own results (${prefix})` };
  return { ok: true };
}

/** A URL for the log: without its query (which may hold a signature). */
function describe(url: string): string {
  const bare = url.split(/[?#]/)[0] ?? '';
  return JSON.stringify(bare.length > 200 ? `${bare.slice(0, 197)}...` : bare);
}

/** The result as its kind's schema reads it, with every file URL it holds (the kind's `resultUrls`). */
function readResult<K extends JobKind>(kind: K, raw: unknown): { urls: string[] } | { issue: { path: PropertyKey[]; message: string } | undefined } {
  const contract = KINDS[kind];
  const parsed = contract.schemas.result.safeParse(raw);
  return parsed.success ? { urls: contract.resultUrls(parsed.data) } : { issue: parsed.error.issues[0] };
}

/** The failure a refused result becomes: the task fails and its credits are refunded. */
export function refusedResult(event: TerminalEvent, kind: JobKind): TerminalEvent {
  return {
    ...event,
    status: 'failed',
    result: null,
    creditsUsed: 0,
    refund: true,
    error: { code: KIND_FAILURE_CODE[kind], status: 500, message: 'The result could not be verified, so it is not shown; the credits were refunded' },
    retryable: true,
  };
}

/**
 * Applied by settle() to an event of a pending task of this gateway (events of other control
 * planes' tasks are none of its business): a completed event passes when its result checks out,
 * else it becomes a refusal, counted as a security event.
 */
export type ResultCheck = (event: TerminalEvent, task: CheckedTask) => TerminalEvent;

export function resultCheck(base: string, security: SecurityEventReporter): ResultCheck {
  return (event, task) => {
    if (event.status !== 'completed') return event;
    const verdict = checkResult(event, task, base);
    if (verdict.ok) return event;
    security('forged_result', { taskId: task.id, worker: event.worker, reason: verdict.reason }, `a worker's result was refused: ${verdict.reason}`);
    return refusedResult(event, task.kind);
  };
}
