/**
 * The submission's trace kept with its debit and task (gateway/store/records.ts, `extras.trace`):
 * read back as stored, and never a reason to refuse a ledger entry or a task record (one that does
 * not parse is dropped, the rest of the record read).
 */
import { describe, expect, it } from 'vitest';
import { submissionExtrasSchema } from '../../../src/gateway/store/records.js';

const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('a stored trace', () => {
  it('is read back with its tracestate', () => {
    expect(
      submissionExtrasSchema.parse({
        webhookUrl: 'https://h.example/x',
        trace: { traceparent, tracestate: 'vendor=abc' },
      }),
    ).toEqual({
      webhookUrl: 'https://h.example/x',
      trace: { traceparent, tracestate: 'vendor=abc' },
    });
    expect(submissionExtrasSchema.parse({})).toEqual({});
  });

  it('that does not parse is dropped, the rest of the record kept', () => {
    for (const trace of [
      { traceparent: 'x'.repeat(56) },
      { traceparent, tracestate: 'y'.repeat(513) },
      'not an object',
      { tracestate: 'a=b' },
    ]) {
      expect(
        submissionExtrasSchema.parse({ pollUrl: '/api/v1/tasks/t1', trace }),
        JSON.stringify(trace).slice(0, 40),
      ).toEqual({ pollUrl: '/api/v1/tasks/t1' });
    }
  });
});
