/**
 * `media-worker tasks watch ID`: follows a task on a gateway over its live events
 * (GET /api/v1/tasks/{id}/events): short progress lines on stderr, the settled task's JSON on
 * stdout; a stream cut before the end is resumed with Last-Event-ID.
 */
import type { Command } from 'commander';
import { definedFields } from '../../defined-fields.js';
import { progressMessageSchema } from '../../protocol/index.js';
import { sleep } from '../../sleep.js';
import { serverSentEvents } from '../event-stream.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_REJECTED } from '../exit.js';
import { stepClockText } from '../progress.js';
import { voice } from '../voice.js';

const TERMINAL_EVENTS = new Set(['completed', 'failed', 'expired', 'cancelled']);
/** Reconnections in a row without any event before giving up. */
const MAX_RECONNECTS = 5;
const RECONNECT_DELAY_MS = 2000;

interface WatchOptions {
  url?: string;
  apiKey?: string;
}

export function registerTasks(program: Command): void {
  const tasks = program
    .command('tasks')
    .summary('tasks on a gateway (its HTTP API)')
    .description('Commands about tasks held by a media-worker gateway, over its HTTP API.');
  tasks
    .command('watch')
    .summary('follow a task live until it settles')
    .description(
      'Follows task ID on the gateway at --url (or MEDIA_WORKER_URL) over GET /api/v1/tasks/{id}/events, with the API key of ' +
        '--api-key or MEDIA_WORKER_API_KEY. Prints one line per progress step on stderr and the settled task (as GET ' +
        '/api/v1/tasks/{id} shows it) as JSON on stdout. Exits 0 when it completed, 2 when it failed, expired or was ' +
        'cancelled, 1 when it cannot be followed (unknown task, bad key, gateway unreachable).',
    )
    .argument('<ID>', 'the task id, as the submission answered it')
    .option('--url <URL>', "the gateway's address, e.g. http://127.0.0.1:8080 (default: MEDIA_WORKER_URL)")
    .option(
      '--api-key <KEY>',
      "the account's API key (default: MEDIA_WORKER_API_KEY; an option shows in the process list)",
    )
    .action(async (id: string, options: WatchOptions) => {
      process.exitCode = await watchTask(id, options);
    });
}

async function watchTask(id: string, options: WatchOptions): Promise<number> {
  const base = options.url ?? process.env['MEDIA_WORKER_URL'];
  const key = options.apiKey ?? process.env['MEDIA_WORKER_API_KEY'];
  if (base === undefined || base === '')
    return fail("Expected --url or MEDIA_WORKER_URL (the gateway's address) but received neither");
  if (key === undefined || key === '') return fail('Expected --api-key or MEDIA_WORKER_API_KEY but received neither');
  let url: URL;
  try {
    url = new URL(`api/v1/tasks/${encodeURIComponent(id)}/events`, base.endsWith('/') ? base : `${base}/`);
  } catch {
    return fail(`Expected --url to be an http(s) address but received ${JSON.stringify(base)}`);
  }
  let lastId: string | undefined;
  let quietTries = 0;
  for (;;) {
    let heard = false;
    try {
      const res = await fetch(url, {
        headers: {
          authorization: `Bearer ${key}`,
          accept: 'text/event-stream',
          ...(lastId === undefined ? {} : { 'last-event-id': lastId }),
        },
      });
      if (!res.ok || res.body === null) return fail(await refusal(res));
      for await (const event of serverSentEvents(res.body)) {
        heard = true;
        if (event.id !== undefined) lastId = event.id;
        if (TERMINAL_EVENTS.has(event.event)) {
          voice().say(`${id}: ${event.event}`, { msg: event.event, taskId: id });
          process.stdout.write(`${event.data}\n`);
          return event.event === 'completed' ? EXIT_OK : EXIT_REJECTED;
        }
        if (event.event === 'progress')
          voice().say(`${id}: ${progressLine(event.data)}`, {
            msg: 'progress',
            taskId: id,
            ...progressFields(event.data),
          });
      }
    } catch (err) {
      voice().say(`${id}: connection lost (${err instanceof Error ? err.message : String(err)})`, {
        level: 'warn',
        msg: 'connection lost',
        taskId: id,
        err,
      });
    }
    quietTries = heard ? 0 : quietTries + 1;
    if (quietTries >= MAX_RECONNECTS)
      return fail(`The gateway at ${base} closed the stream ${MAX_RECONNECTS} times without an event`);
    const resuming = `stream ended before the task settled; resuming${lastId === undefined ? '' : ` after event ${lastId}`}`;
    voice().say(`${id}: ${resuming}`, { level: 'warn', msg: resuming, taskId: id });
    await sleep(RECONNECT_DELAY_MS);
  }
}

/** A progress event's figures as a record's fields (--log-format json); none when the data is not JSON. */
function progressFields(data: string): Record<string, unknown> {
  try {
    const p = JSON.parse(data) as Record<string, unknown>;
    return definedFields({
      stage: p['stage'],
      done: p['done'],
      total: p['total'],
      unit: p['unit'],
      percent: p['percent'],
      etaSeconds: p['etaSeconds'],
      step: progressMessageSchema.shape.step.parse(p['step']),
    });
  } catch {
    return {};
  }
}

/**
 * `upscaling 3/8 tiles 37.5 %, about 18 s left` from a progress event's data, and while one unit
 * runs long its clock (`step`), as a local run says it: `..., tile 4 running 48.0s of ~59.0s estimated`.
 */
export function progressLine(data: string): string {
  try {
    const p = JSON.parse(data) as {
      stage?: string;
      done?: number;
      total?: number;
      unit?: string;
      percent?: number;
      etaSeconds?: number;
      step?: unknown;
    };
    const count =
      p.done === undefined
        ? ''
        : ` ${p.done}${p.total === undefined ? '' : `/${p.total}`}${p.unit === undefined ? '' : ` ${p.unit}`}`;
    const eta = typeof p.etaSeconds === 'number' ? `, about ${spokenDuration(p.etaSeconds)} left` : '';
    // The sender's claim: a step out of bounds is dropped whole, as the protocol's readers do.
    const step = progressMessageSchema.shape.step.parse(p.step);
    let clock = '';
    if (step !== undefined) {
      const { estimatedSeconds, ...running } = step;
      clock = `, ${stepClockText(p.unit, { ...running, ...definedFields({ estimatedSeconds }) })}`;
    }
    return `${p.stage ?? 'working'}${count}${p.percent === undefined ? '' : ` ${p.percent} %`}${eta}${clock}`;
  } catch {
    return 'progress';
  }
}

/** `18 s`, `2 min 5 s`, `1 h 20 min`: whole seconds as a person says them. */
export function spokenDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 === 0 ? '' : ` ${s % 60} s`}`;
  const minutes = Math.round((s % 3600) / 60);
  return `${Math.floor(s / 3600) + (minutes === 60 ? 1 : 0)} h${minutes === 0 || minutes === 60 ? '' : ` ${minutes} min`}`;
}

async function refusal(res: Response): Promise<string> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error?.code !== undefined) return `${res.status} ${body.error.code}: ${body.error.message ?? ''}`;
  } catch {
    // not the API's envelope: shown as it came
  }
  return `${res.status} ${text.slice(0, 200)}`;
}

function fail(message: string): number {
  voice().say(`media-worker: ${message}`, { level: 'error', msg: message });
  return EXIT_FAILURE;
}
