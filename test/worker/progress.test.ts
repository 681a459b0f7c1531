import { afterEach, describe, expect, it, vi } from 'vitest';
import { createProgressPublisher } from '../../src/worker/progress.js';

// Split from test/protocol/events.test.ts: the reporter is src/worker/progress.ts's, the wire shapes protocol's.
describe('progress reporter', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends a new stage at once, then at most one message per interval with the latest value', () => {
    vi.useFakeTimers({ now: new Date('2025-01-01T00:00:00.000Z') });
    const sent: { subject: string; body: { stage: string; done?: number } }[] = [];
    const nc = { publish: (subject: string, data: string) => sent.push({ subject, body: JSON.parse(data) }) };
    const reporter = createProgressPublisher(nc as never, 't9', 'vendor-video-upscale', 1000);
    reporter.report({ stage: 'download' });
    reporter.report({ stage: 'frames', done: 1, total: 100 });
    reporter.report({ stage: 'frames', done: 2, total: 100 });
    reporter.report({ stage: 'frames', done: 3, total: 100 });
    expect(sent.map((m) => [m.body.stage, m.body.done])).toEqual([
      ['download', undefined],
      ['frames', 1],
    ]);
    vi.advanceTimersByTime(1000);
    expect(sent.map((m) => m.body.done)).toEqual([undefined, 1, 3]);
    expect(sent.every((m) => m.subject === 'media.progress.t9')).toBe(true);
    reporter.report({ stage: 'frames', done: 4, total: 100 });
    reporter.close();
    vi.advanceTimersByTime(5000);
    expect(sent).toHaveLength(3);
    // Counted per attempt: the gateway's live events name and order messages by at and seq.
    expect(sent.map((m) => (m.body as { seq?: number }).seq)).toEqual([1, 2, 3]);
  });
});
