/**
 * A completed event's result checked before it is shown or signed. A worker writes results under
 * `<RESULTS_BASE_URL>/<kind>/<task id>/<name>.<ext>` (src/worker/results.ts), so that is the only
 * place a task's result may point: a result naming anything else (another task's result, an
 * upload, another host) comes from a worker that lies, and the task fails with its refund instead
 * (docs/contract.md, "What the gateway checks"). The event lists every file with its key, size and
 * sha256 (protocol 2.1): the list must match the result's URLs, and the stored copies what the
 * list says (stored-files.ts), so a task is never completed with a file missing. Pure but for the
 * stored copies and the report of the security event.
 */
import { KIND_FAILURE_CODE, KINDS, isModelId, reportedModel, type JobKind } from '../../jobs/index.js';
import { resultUrl, type ResultFile, type TerminalEvent } from '../../protocol/index.js';
import type { SecurityEventReporter } from '../monitoring/security-events.js';
import type { StoredFileCheck } from './stored-files.js';

export type ResultVerdict = { ok: true } | { ok: false; reason: string };

/** One file name as the worker's result store makes them (resultRelativePath). */
const FILE_NAME = /^[A-Za-z0-9_-]{1,64}\.[a-z0-9]{1,8}$/;

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
  if (event.model !== model)
    return {
      ok: false,
      reason: `the event's model ${JSON.stringify(event.model)} is not the task's ${JSON.stringify(model)}`,
    };
  const read = readResult(task.kind, event.result);
  if ('issue' in read)
    return {
      ok: false,
      reason: `the result is not a ${task.kind} result (${read.issue?.path.join('.') || 'result'}: ${read.issue?.message ?? 'invalid'})`,
    };
  const prefix = taskResultsPrefix(base, task.kind, task.id);
  const { urls } = read;
  const stray = urls.find((url) => !url.startsWith(prefix) || !FILE_NAME.test(url.slice(prefix.length)));
  if (stray !== undefined)
    return {
      ok: false,
      reason: `the result references ${describe(stray)}, outside the task's own results (${prefix})`,
    };
  return checkFileList(event.files, urls, prefix, `${task.kind}/${task.id}/`);
}

/** Every URL of the result has its file in the event's list, under the task's own key, and the list holds nothing else. */
function checkFileList(
  files: readonly ResultFile[] | undefined,
  urls: readonly string[],
  prefix: string,
  keyPrefix: string,
): ResultVerdict {
  if (files === undefined)
    return {
      ok: false,
      reason: 'the event lists no stored files with their size and sha256 (a worker before protocol 2.1)',
    };
  const named = new Set(urls);
  if (files.length !== named.size)
    return { ok: false, reason: `the event lists ${files.length} files for a result of ${named.size}` };
  for (const url of named) {
    const file = files.find((f) => f.url === url);
    if (file === undefined) return { ok: false, reason: `the event lists no stored file for ${describe(url)}` };
    if (file.key !== keyPrefix + url.slice(prefix.length))
      return { ok: false, reason: `the event stores ${describe(url)} under the key ${JSON.stringify(file.key)}` };
  }
  return { ok: true };
}

/** A URL for the log: without its query (which may hold a signature). */
function describe(url: string): string {
  const bare = url.split(/[?#]/)[0] ?? '';
  return JSON.stringify(bare.length > 200 ? `${bare.slice(0, 197)}...` : bare);
}

/** The result as its kind's schema reads it, with every file URL it holds (the kind's `resultUrls`). */
function readResult<K extends JobKind>(
  kind: K,
  raw: unknown,
): { urls: string[] } | { issue: { path: PropertyKey[]; message: string } | undefined } {
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
    error: {
      code: KIND_FAILURE_CODE[kind],
      status: 500,
      message: 'The result could not be verified, so it is not shown; the credits were refunded',
    },
    retryable: true,
  };
}

/**
 * Applied by settle() to an event of a pending task of this gateway (events of other control
 * planes' tasks are none of its business): a completed event passes when its result checks out
 * and its stored files are what it says (`stored`, where this gateway can see the store), else it
 * becomes a refusal, counted as a security event. Throws when the store cannot be asked: the event
 * is settled later.
 */
export type ResultCheck = (event: TerminalEvent, task: CheckedTask) => Promise<TerminalEvent>;

export function resultCheck(base: string, security: SecurityEventReporter, stored?: StoredFileCheck): ResultCheck {
  return async (event, task) => {
    if (event.status !== 'completed') return event;
    const verdict = checkResult(event, task, base);
    const reason = verdict.ok ? await storedFilesProblem(event.files ?? [], stored) : verdict.reason;
    if (reason === null) return event;
    security(
      'forged_result',
      { taskId: task.id, worker: event.worker, reason },
      `a worker's result was refused: ${reason}`,
    );
    return refusedResult(event, task.kind);
  };
}

async function storedFilesProblem(
  files: readonly ResultFile[],
  stored: StoredFileCheck | undefined,
): Promise<string | null> {
  if (stored === undefined) return null;
  for (const file of files) {
    const problem = await stored(file);
    if (problem !== null) return `the stored copy is not what the event says: ${problem}`;
  }
  return null;
}
