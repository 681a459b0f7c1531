/**
 * The pure parts of the live task events: event ids and their order, the event-stream reader the
 * CLI uses, and the hub's bounds and fan-out with in-memory sinks (the HTTP and NATS side:
 * task-events.e2e.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { serverSentEvents } from '../../src/cli/event-stream.js';
import { isAfter, parseLastEventId, positionOf, progressEventId } from '../../src/gateway/task-events/event-ids.js';
import { taskEventHub, type EventSink } from '../../src/gateway/task-events/hub.js';
import { sseEvent } from '../../src/gateway/task-events/sse.js';
import type { TaskRecord } from '../../src/gateway/store/records.js';
import type { ProgressMessage } from '../../src/protocol/index.js';

function message(at: string, seq: number | undefined, stage = 'upscaling'): ProgressMessage {
  return { id: 't1', model: 'vendor-image-upscale', stage, at, ...(seq === undefined ? {} : { seq }) };
}

function sink(): EventSink & { text: string; ended: boolean } {
  const s = {
    text: '',
    ended: false,
    write: (t: string) => ((s.text += t), true),
    backlog: () => 0,
    end: () => void (s.ended = true),
  };
  return s;
}

async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield new TextEncoder().encode(p);
}

describe('event ids', () => {
  it('name a progress message by its time and count, order them, and read Last-Event-ID', () => {
    const first = positionOf(message('2026-03-01T12:00:30.000Z', 1))!;
    const sameMs = positionOf(message('2026-03-01T12:00:30.000Z', 2))!;
    const redelivered = positionOf(message('2026-03-01T12:05:00.000Z', 1))!;
    expect(progressEventId(first)).toBe('1772366430000-1');
    expect([
      isAfter(sameMs, first),
      isAfter(first, sameMs),
      isAfter(redelivered, sameMs),
      isAfter(first, first),
      isAfter(first, null),
    ]).toEqual([true, false, true, false, true]);
    expect(parseLastEventId('1772366430000-1')).toEqual({ kind: 'progress', position: first });
    expect(parseLastEventId('end')).toEqual({ kind: 'terminal' });
    expect([parseLastEventId(undefined), parseLastEventId('x-1'), parseLastEventId('1-')]).toEqual([
      { kind: 'none' },
      { kind: 'none' },
      { kind: 'none' },
    ]);
    expect(positionOf(message('not a date', 1))).toBeNull();
    expect(positionOf(message('2026-03-01T12:00:30.000Z', undefined))?.seq).toBe(0);
  });
});

describe('the event-stream reader', () => {
  it('reads events split anywhere across chunks, skipping comments and retry', async () => {
    const text = `retry: 3000\n\n${sseEvent('1-1', 'progress', { a: 1 })}: heartbeat\n\r\n${sseEvent('end', 'completed', { b: 'x\ny' })}`;
    const events = [];
    for await (const e of serverSentEvents(chunks(...text.match(/[\s\S]{1,7}/g)!))) events.push(e);
    expect(events).toEqual([
      { id: '1-1', event: 'progress', data: '{"a":1}' },
      { id: 'end', event: 'completed', data: '{"b":"x\\ny"}' },
    ]);
  });
});

describe('the hub', () => {
  const pending = { id: 't1', accountId: 'a1', status: 'pending' } as TaskRecord;
  const hub = (perAccount: number, perGateway: number) =>
    taskEventHub(
      { task: async () => pending, shown: async (t) => ({ id: t.id, status: t.status }), onError: () => undefined },
      { perAccount, perGateway, heartbeatMs: 60_000 },
    );

  it('refuses streams over the account and gateway bounds with 429 TOO_MANY_STREAMS, and frees a closed one', () => {
    const h = hub(2, 3);
    const [s1] = [h.open('a1', 't1', sink, null), h.open('a1', 't1', sink, null)];
    expect(() => h.open('a1', 't1', sink, null)).toThrow(
      expect.objectContaining({ code: 'TOO_MANY_STREAMS', status: 429 }),
    );
    h.open('a2', 't2', sink, null);
    expect(() => h.open('a3', 't3', sink, null)).toThrow(/GATEWAY_EVENT_STREAMS\)/);
    s1.close();
    expect(h.openCount()).toBe(2);
    h.open('a3', 't3', sink, null);
    h.close();
    expect(h.openCount()).toBe(0);
  });

  it("sends a task's progress after the resume point only, then its terminal task once, and ends", async () => {
    const h = hub(5, 5);
    const [mine, resumed, other] = [sink(), sink(), sink()];
    h.open('a1', 't1', () => mine, null);
    h.open('a1', 't1', () => resumed, positionOf(message('2026-03-01T12:00:30.000Z', 2)));
    h.open('a2', 't2', () => other, null);
    h.heardProgress(message('2026-03-01T12:00:30.000Z', 2));
    h.heardProgress(message('2026-03-01T12:00:31.000Z', 3));
    h.heardProgress(message('2026-03-01T12:00:30.500Z', 1)); // older: dropped
    h.heardTask({ ...pending, accountId: 'a2', status: 'completed' } as TaskRecord); // another account's record of the id: ignored
    expect(mine.ended).toBe(false);
    h.heardTask({ ...pending, status: 'failed', error: { code: 'CANCELLED', message: 'cancelled' } } as TaskRecord);
    await new Promise((r) => setImmediate(r));
    const ids = (s: { text: string }) => [...s.text.matchAll(/^id: (.*)$/gm)].map((m) => m[1]);
    expect(ids(mine)).toEqual(['1772366430000-2', '1772366431000-3', 'end']);
    expect(ids(resumed)).toEqual(['1772366431000-3', 'end']);
    expect(mine.text).toContain('event: cancelled\ndata: {"id":"t1","status":"failed"}\n\n');
    expect([mine.ended, resumed.ended, other.ended, other.text]).toEqual([true, true, false, '']);
    expect(h.openCount()).toBe(1);
    h.close();
  });
});
