/**
 * The open live-event streams of one gateway (GET /api/v1/tasks/{id}/events), fed by the gateway's
 * one progress subscription (../progress-board.ts) and the poll view's watch of the tasks store
 * (poll-view/poll-view.ts): no NATS subscription or consumer per stream. Bounded per account and per
 * gateway; one timer writes every stream's heartbeat and, as a safety net for a watch that was
 * interrupted, checks whether its task has settled.
 */
import type { ProgressMessage } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import type { TaskRecord } from '../store/records.js';
import { webhookEvent } from '../webhooks/records.js';
import { isAfter, positionOf, progressEventId, TERMINAL_EVENT_ID, type ProgressPosition } from './event-ids.js';
import { SSE_HEARTBEAT, sseEvent } from './sse.js';

/** Where a stream's text goes: the HTTP response. */
export interface EventSink {
  /** false when the client is not reading (the text is queued). */
  write(text: string): boolean;
  /** Text queued and not yet taken by the client. */
  backlog(): number;
  end(): void;
}

export interface TaskEventLimits {
  perAccount: number;
  perGateway: number;
  heartbeatMs: number;
}

export interface TaskEventHubDeps {
  /** The task as a poll sees it now (poll view). */
  task(accountId: string, taskId: string): Promise<TaskRecord | null>;
  /** A settled task's object exactly as GET /api/v1/tasks/{id} shows it (signed links, webhook state). */
  shown(task: TaskRecord): Promise<Record<string, unknown>>;
  onError(err: unknown, taskId: string): void;
}

export interface OpenStream {
  /** Sends the message when it is newer than what the stream has seen. */
  progress(message: ProgressMessage): void;
  /** Sends the terminal event and ends the stream. */
  settle(task: TaskRecord): Promise<void>;
  close(): void;
}

/** A client that reads nothing for this much queued text is dropped (it can resume with Last-Event-ID). */
const MAX_BACKLOG_BYTES = 64 * 1024;

interface Stream extends OpenStream {
  accountId: string;
  taskId: string;
  sink: EventSink;
}

export interface TaskEventHub {
  /** A new stream of the account's pending task; refused with 429 TOO_MANY_STREAMS over a limit, before `sink` is made. */
  open(accountId: string, taskId: string, sink: () => EventSink, after: ProgressPosition | null): OpenStream;
  /** A settled task's terminal event. */
  terminalEvent(task: TaskRecord): Promise<string>;
  /** Every progress message the gateway hears. */
  heardProgress(message: ProgressMessage): void;
  /** Every task record the gateway hears. */
  heardTask(task: TaskRecord): void;
  openCount(): number;
  /** Ends every stream (the gateway is stopping; clients resume on another one). */
  close(): void;
}

export function taskEventHub(deps: TaskEventHubDeps, limits: TaskEventLimits): TaskEventHub {
  const byTask = new Map<string, Set<Stream>>();
  const perAccount = new Map<string, number>();
  let open = 0;

  const remove = (stream: Stream) => {
    const set = byTask.get(stream.taskId);
    if (set?.delete(stream) !== true) return;
    if (set.size === 0) byTask.delete(stream.taskId);
    open -= 1;
    const left = (perAccount.get(stream.accountId) ?? 1) - 1;
    if (left === 0) perAccount.delete(stream.accountId);
    else perAccount.set(stream.accountId, left);
  };

  const send = (stream: Stream, text: string) => {
    stream.sink.write(text);
    if (stream.sink.backlog() > MAX_BACKLOG_BYTES) stream.close();
  };

  const streams = () => [...byTask.values()].flatMap((set) => [...set]);

  const terminalEvent = async (task: TaskRecord) =>
    sseEvent(TERMINAL_EVENT_ID, webhookEvent(task) ?? 'failed', await deps.shown(task));

  const timer = setInterval(() => {
    for (const stream of streams()) {
      send(stream, SSE_HEARTBEAT);
      // The watch normally settles streams at once; this catches a change it missed while interrupted.
      deps.task(stream.accountId, stream.taskId).then(
        (task) => (task !== null && task.status !== 'pending' ? stream.settle(task) : undefined),
        (err: unknown) => deps.onError(err, stream.taskId),
      );
    }
  }, limits.heartbeatMs);
  timer.unref();

  return {
    open(accountId, taskId, makeSink, after) {
      const mine = perAccount.get(accountId) ?? 0;
      if (mine >= limits.perAccount) {
        throw ApiError.of(
          'TOO_MANY_STREAMS',
          `Expected at most ${limits.perAccount} open event streams per account on this gateway (GATEWAY_EVENT_STREAMS_PER_ACCOUNT) but this account has ${mine} open`,
          { 'retry-after': '5' },
        );
      }
      if (open >= limits.perGateway) {
        throw ApiError.of(
          'TOO_MANY_STREAMS',
          `Expected at most ${limits.perGateway} open event streams on this gateway (GATEWAY_EVENT_STREAMS) but ${open} are open`,
          { 'retry-after': '5' },
        );
      }
      const sink = makeSink();
      let last = after;
      let ended = false;
      const stream: Stream = {
        accountId,
        taskId,
        sink,
        progress(message) {
          const position = positionOf(message);
          if (ended || position === null || !isAfter(position, last)) return;
          last = position;
          send(stream, sseEvent(progressEventId(position), 'progress', message));
        },
        async settle(task) {
          if (ended) return;
          ended = true;
          remove(stream);
          try {
            sink.write(await terminalEvent(task));
          } catch (err) {
            deps.onError(err, taskId);
          }
          sink.end();
        },
        close() {
          if (ended) return;
          ended = true;
          remove(stream);
          sink.end();
        },
      };
      const set = byTask.get(taskId) ?? new Set<Stream>();
      set.add(stream);
      byTask.set(taskId, set);
      perAccount.set(accountId, mine + 1);
      open += 1;
      return stream;
    },
    heardProgress(message) {
      const set = byTask.get(message.id);
      if (set !== undefined) for (const stream of [...set]) stream.progress(message);
    },
    heardTask(task) {
      if (task.status === 'pending') return;
      const set = byTask.get(task.id);
      if (set === undefined) return;
      for (const stream of [...set]) if (stream.accountId === task.accountId) void stream.settle(task);
    },
    terminalEvent,
    openCount: () => open,
    close() {
      clearInterval(timer);
      for (const stream of streams()) stream.close();
    },
  };
}
