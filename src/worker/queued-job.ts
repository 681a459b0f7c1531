/**
 * A task's job message while it waits in the jobs stream (a work queue: a job stays there until a
 * worker acks or terminates it). A cancel of a queued task reads its creation time, model and
 * credits from it (cancel.ts) rather than from the cancel's time.
 *
 * Read one stored message at a time through the stream's message API (`next_by_subj`): a
 * work-queue stream allows no second consumer over the workers' subjects. Bounded in messages and
 * time, since the cancel's requester waits: past the bound the job counts as not found.
 */
import type { JetStreamManager, StoredMsg } from '@nats-io/jetstream';
import { isModelId, kindOfModel } from '../jobs/index.js';
import { JOBS_SUBJECT_PREFIX, bodyCredits, bodyField, creationTime, jobSubject, readTaskId } from '../protocol/index.js';

/** What a queued job says about its task. */
export interface QueuedJob {
  model: unknown;
  credits: number | undefined;
  /** The body's `createdAt`, else when the stream stored the job (as the job's own event would say). */
  createdAt: Date;
}

export interface QueuedJobLookup {
  jsm: JetStreamManager;
  jobsStream: string;
  /** At most this many stored messages are read (default 1,000). */
  maxMessages?: number;
  /** And for at most this long (default 1 s). */
  maxMs?: number;
}

const MAX_MESSAGES = 1_000;
const MAX_MS = 1_000;

/** The subjects the job can be on: its model's, when the cancel names a known one. */
export function queuedJobFilter(model: string | undefined): string {
  return model !== undefined && isModelId(model) ? jobSubject(kindOfModel(model), model) : `${JOBS_SUBJECT_PREFIX}.>`;
}

/** The job of `taskId` still in the stream, or null (not there, or not within the bounds). Throws only when NATS fails. */
export async function findQueuedJob(lookup: QueuedJobLookup, taskId: string, model: string | undefined): Promise<QueuedJob | null> {
  const filter = queuedJobFilter(model);
  const deadline = Date.now() + (lookup.maxMs ?? MAX_MS);
  let seq = 0;
  for (let read = 0; read < (lookup.maxMessages ?? MAX_MESSAGES) && Date.now() < deadline; read += 1) {
    // `next_by_subj` is the server's (2.9+) message-get request; the client's type names only seq and last_by_subj.
    const stored: StoredMsg | null = await lookup.jsm.streams.getMessage(lookup.jobsStream, { next_by_subj: filter, seq } as unknown as { seq: number });
    if (stored === null) return null;
    const reading = readTaskId(stored.header, stored.data);
    if (reading.ok && reading.id === taskId) {
      return {
        model: bodyField(reading.body, 'model'),
        credits: bodyCredits(reading.body),
        createdAt: creationTime(bodyField(reading.body, 'createdAt'), stored.time),
      };
    }
    seq = stored.seq + 1;
  }
  return null;
}
