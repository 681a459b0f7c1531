/**
 * Task records: the latest state of each task on `<p>.tasks.<account>.<task>` (so a lookup is
 * always within the caller's account), and `<p>.owners.<task>` for the events consumer, which only
 * knows the task id.
 */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { z } from 'zod';
import { taskRecordSchema, type TaskRecord } from './records.js';
import type { StoreNames } from './streams.js';
import { WriteConflict, readLast, writeIf, type Versioned } from './subject-store.js';

const ownerSchema = z.object({ accountId: z.string() });
const orderSchema = z.object({ taskId: z.string() });

export class Tasks {
  private readonly listeners: ((seq: number, task: TaskRecord) => void)[] = [];

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly names: StoreNames,
  ) {}

  /** Called with every task record this process writes, once stored (the poll view's read-your-writes). */
  onWrite(listener: (seq: number, task: TaskRecord) => void): void {
    this.listeners.push(listener);
  }

  async get(accountId: string, taskId: string): Promise<Versioned<TaskRecord> | null> {
    return readLast(this.jsm, this.names.tasksStream, this.names.taskSubject(accountId, taskId), taskRecordSchema);
  }

  async owner(taskId: string): Promise<string | null> {
    return (
      (await readLast(this.jsm, this.names.tasksStream, this.names.ownerSubject(taskId), ownerSchema))?.value
        .accountId ?? null
    );
  }

  /**
   * Creates the task, its owner entry and (when `n`, the account's debit count, is known) its
   * place in the account's history, unless they exist; returns the stored task.
   */
  async ensure(task: TaskRecord, n?: number): Promise<Versioned<TaskRecord>> {
    await writeIf(this.js, this.names.ownerSubject(task.id), { accountId: task.accountId }, 0).catch(ignoreConflict);
    if (n !== undefined)
      await writeIf(this.js, this.names.orderSubject(task.accountId, n), { taskId: task.id }, 0).catch(ignoreConflict);
    try {
      const ack = await writeIf(this.js, this.names.taskSubject(task.accountId, task.id), task, 0);
      this.written(ack.seq, task);
      return { seq: ack.seq, value: task };
    } catch (err) {
      if (!(err instanceof WriteConflict)) throw err;
      const existing = await this.get(task.accountId, task.id);
      if (existing === null) throw err;
      return existing;
    }
  }

  /** Replaces the task if it is still at `seq`; a WriteConflict otherwise. */
  async replace(current: Versioned<TaskRecord>, next: TaskRecord): Promise<void> {
    this.written(
      (await writeIf(this.js, this.names.taskSubject(next.accountId, next.id), next, current.seq)).seq,
      next,
    );
  }

  private written(seq: number, task: TaskRecord): void {
    for (const listener of this.listeners) listener(seq, task);
  }

  /**
   * A page of the account's history by place: tasks `before - 1` down to `before - limit` (1 is the
   * first), one lookup each, so a page costs its size whatever the history's length. A place whose
   * index entry is still being written (its debit is a moment old) is skipped.
   */
  async pageByPlace(accountId: string, before: number, limit: number): Promise<{ ids: string[]; next: number | null }> {
    const places = Array.from({ length: Math.max(0, Math.min(limit, before - 1)) }, (_, i) => before - 1 - i);
    const found = await Promise.all(
      places.map((n) => readLast(this.jsm, this.names.tasksStream, this.names.orderSubject(accountId, n), orderSchema)),
    );
    const last = places[places.length - 1];
    return {
      ids: found.flatMap((f) => (f === null ? [] : [f.value.taskId])),
      next: last !== undefined && last > 1 ? last : null,
    };
  }

  /**
   * Task ids of an account, newest first, after `cursor` (a task id) when given. The ids come from
   * the stream's subject list, which the server filters, so only this account's subjects are read.
   * For accounts older than the history index (their ledger keeps no debit count): every page
   * lists all their task ids.
   */
  async listIds(accountId: string, limit: number, cursor?: string): Promise<{ ids: string[]; next: string | null }> {
    const filter = this.names.accountTasksFilter(accountId);
    const info = await this.jsm.streams
      .info(this.names.tasksStream, { subjects_filter: filter })
      .catch((err: unknown) => {
        if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) return null;
        throw err;
      });
    const subjects = Object.keys(info?.state.subjects ?? {});
    const ids = subjects
      .map((s) => s.slice(s.lastIndexOf('.') + 1))
      .sort()
      .reverse();
    const start = cursor === undefined ? 0 : ids.findIndex((id) => id < cursor);
    const page = start < 0 ? [] : ids.slice(start, start + limit);
    const more = start >= 0 && start + limit < ids.length;
    return { ids: page, next: more ? (page[page.length - 1] ?? null) : null };
  }
}

function ignoreConflict(err: unknown): void {
  if (!(err instanceof WriteConflict)) throw err;
}
