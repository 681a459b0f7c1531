/**
 * The ids of a task's live events (docs/contract.md, "Live task events"). A progress event is named
 * by its worker message's `at` (milliseconds) and `seq`, `<at ms>-<seq>`: every gateway hears the
 * same message and names it alike, so a client may resume on any gateway with Last-Event-ID. A
 * redelivered job's worker counts `seq` from 1 again, later in `at`, so the order (at, then seq)
 * still holds. The terminal event is `end`: nothing comes after it.
 */
import type { ProgressMessage } from '../../protocol/index.js';

export const TERMINAL_EVENT_ID = 'end';

export interface ProgressPosition {
  atMs: number;
  seq: number;
}

/** A client's Last-Event-ID: a progress position, the terminal, or none (absent or not ours). */
export type LastEventId = { kind: 'progress'; position: ProgressPosition } | { kind: 'terminal' } | { kind: 'none' };

export function positionOf(message: Pick<ProgressMessage, 'at' | 'seq'>): ProgressPosition | null {
  const atMs = Date.parse(message.at);
  return Number.isFinite(atMs) ? { atMs, seq: message.seq ?? 0 } : null;
}

export function progressEventId(position: ProgressPosition): string {
  return `${position.atMs}-${position.seq}`;
}

export function parseLastEventId(header: string | string[] | undefined): LastEventId {
  const text = (Array.isArray(header) ? header[0] : header)?.trim();
  if (text === TERMINAL_EVENT_ID) return { kind: 'terminal' };
  const match = text === undefined ? null : /^(\d{1,15})-(\d{1,9})$/.exec(text);
  if (match === null) return { kind: 'none' };
  return { kind: 'progress', position: { atMs: Number(match[1]), seq: Number(match[2]) } };
}

/** Whether `position` comes after `last` (always, when nothing was seen yet). */
export function isAfter(position: ProgressPosition, last: ProgressPosition | null): boolean {
  if (last === null) return true;
  return position.atMs > last.atMs || (position.atMs === last.atMs && position.seq > last.seq);
}
