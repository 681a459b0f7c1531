import { describe, expect, it } from 'vitest';
import { isLive, nextState, type LifecycleEvent, type WorkerState } from '../../src/worker/lifecycle.js';

describe('the worker lifecycle', () => {
  it.each([
    ['starting', 'started', 'running'],
    ['starting', 'closed', 'failed'],
    ['running', 'drain', 'draining'],
    ['running', 'closed', 'failed'],
    ['draining', 'drained', 'stopped'],
    // The drain closes the connection itself: not a failure.
    ['draining', 'closed', 'draining'],
    // The end states stay.
    ['stopped', 'started', 'stopped'],
    ['failed', 'drain', 'failed'],
    ['running', 'started', 'running'],
  ] as const satisfies readonly (readonly [WorkerState, LifecycleEvent, WorkerState])[])(
    '%s --%s--> %s',
    (from, event, to) => {
      expect(nextState(from, event)).toBe(to);
    },
  );

  it('is live until it has stopped or failed', () => {
    expect((['starting', 'running', 'draining', 'stopped', 'failed'] as const).map(isLive)).toEqual([
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});
