/**
 * GET /api/v1/tasks/{id}/events: the task's live events as server-sent events (docs/contract.md,
 * "Live task events"). A settled task answers its terminal event at once; a pending one holds a
 * stream in the hub until it settles. Authentication and rate limits are the API scope's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ProgressBoard } from '../../progress-board.js';
import { taskNotFound } from '../../service.js';
import type { TaskRecord } from '../../store/records.js';
import { isAfter, parseLastEventId, positionOf } from '../../task-events/event-ids.js';
import type { EventSink, TaskEventHub } from '../../task-events/hub.js';
import { SSE_HEADERS, SSE_PREAMBLE } from '../../task-events/sse.js';

export interface TaskEventRouteDeps {
  hub: TaskEventHub;
  progress: ProgressBoard;
  task(accountId: string, taskId: string): Promise<TaskRecord | null>;
  schema: Record<string, unknown>;
}

const TASK_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function registerTaskEvents(api: FastifyInstance, deps: TaskEventRouteDeps): void {
  api.get('/api/v1/tasks/:id/events', { schema: deps.schema }, async (req, reply) => {
    const { id } = req.params as { id: string };
    const task = TASK_ID.test(id) ? await deps.task(req.accountId, id) : null;
    if (task === null) throw taskNotFound(id);
    const last = parseLastEventId(req.headers['last-event-id']);
    // The client has the terminal event: nothing comes after it (204 stops an EventSource reconnecting).
    if (last.kind === 'terminal') return reply.code(204).send();
    if (task.status !== 'pending') {
      const event = await deps.hub.terminalEvent(task);
      const settled = sink(req, reply);
      settled.write(event);
      return settled.end();
    }
    const after = last.kind === 'progress' ? last.position : null;
    // Refused (429) before anything is written, so the error has its usual envelope.
    const stream = deps.hub.open(req.accountId, id, () => sink(req, reply), after);
    reply.raw.once('close', () => stream.close());
    const latest = deps.progress.latest(id);
    const position = latest === undefined ? null : positionOf(latest);
    if (latest !== undefined && position !== null && isAfter(position, after)) stream.progress(latest);
    // It may have settled between the first read and the stream's registration (the watch's news went by).
    const now = await deps.task(req.accountId, id);
    if (now !== null && now.status !== 'pending') await stream.settle(now);
  });
}

/** The response, taken over from Fastify: its headers written now, its socket kept open past the idle timeout. */
function sink(req: FastifyRequest, reply: FastifyReply): EventSink {
  void reply.hijack();
  const res = reply.raw;
  req.raw.socket.setTimeout(0);
  res.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), ...SSE_HEADERS });
  res.write(SSE_PREAMBLE);
  return {
    write: (text) => res.write(text),
    backlog: () => res.writableLength,
    end: () => res.end(),
  };
}
