/**
 * The latest progress of running tasks, from the workers' `media.progress.<task id>` (core NATS,
 * best effort, docs/protocol.md). Every gateway subscribes (no queue group), so whichever one a
 * poll reaches knows it. Held in memory only, bounded, and dropped when a task settles: it is a
 * hint for the caller, never state.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { z } from 'zod';
import { PROGRESS_SUBJECT_PREFIX } from '../protocol/index.js';

const progressSchema = z.object({
  id: z.string(),
  stage: z.string(),
  percent: z.number().optional(),
  at: z.string(),
});

export type TaskProgress = Omit<z.infer<typeof progressSchema>, 'id'>;

const MAX_TRACKED = 10_000;

export interface ProgressBoard {
  get(taskId: string): TaskProgress | undefined;
  forget(taskId: string): void;
  stop(): void;
}

export function watchProgress(nc: NatsConnection): ProgressBoard {
  const latest = new Map<string, TaskProgress>();
  const sub: Subscription = nc.subscribe(`${PROGRESS_SUBJECT_PREFIX}.>`, {
    callback: (err, msg) => {
      if (err) return;
      let parsed;
      try {
        parsed = progressSchema.safeParse(msg.json());
      } catch {
        return;
      }
      if (!parsed.success) return;
      const { id, ...progress } = parsed.data;
      latest.delete(id); // re-inserted last: the map's order is the eviction order
      latest.set(id, progress);
      if (latest.size > MAX_TRACKED) latest.delete(latest.keys().next().value as string);
    },
  });
  return {
    get: (taskId) => latest.get(taskId),
    forget: (taskId) => void latest.delete(taskId),
    stop: () => sub.unsubscribe(),
  };
}
