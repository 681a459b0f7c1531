/** StageGroup: stages that stop together and keep the failure that explains the stop. */
import { describe, expect, it } from 'vitest';
import { PipelineStopped, StageGroup } from '../../src/video/index.js';

const rejected = (error: unknown): Promise<never> => Promise.reject(error);

describe('StageGroup', () => {
  it('stops every stage at the first real failure and throws that one once all settled', async () => {
    const group = new StageGroup(undefined, 'test pipeline');
    const woken: string[] = [];
    group.onHalt(() => woken.push('queue'));
    const boom = new Error('boom');
    // The other stage notices the stop and rejects with the stop itself: an echo, not a failure.
    const echo = new Promise((_, reject) => group.signal.addEventListener('abort', () => reject(group.signal.reason)));
    await group.settle([group.run(rejected(boom)), group.run(echo)]);
    expect(group.signal.aborted).toBe(true);
    expect(group.signal.reason).toBeInstanceOf(PipelineStopped);
    expect(group.signal.reason.message).toBe('The test pipeline was stopped');
    expect(woken).toEqual(['queue']);
    expect(() => group.throwIfFailed()).toThrow(boom);
  });

  it('keeps a later failure of higher rank over an earlier one, and the first among equals', () => {
    const group = new StageGroup(undefined);
    const pipe = new Error('EPIPE');
    const decoder = new Error('decoder exited');
    group.fail(pipe);
    group.fail(new Error('second of rank 0'));
    group.fail(decoder, 2);
    group.fail(new Error('encoder'), 1);
    expect(() => group.throwIfFailed((error, rank) => new Error(`${(error as Error).message} (rank ${rank})`))).toThrow(
      'decoder exited (rank 2)',
    );
  });

  it("stops on the caller's abort and throws the caller's reason, not the stages' echoes", async () => {
    const caller = new AbortController();
    const group = new StageGroup(caller.signal);
    const stage = new Promise((_, reject) => group.signal.addEventListener('abort', () => reject(group.signal.reason)));
    const reason = new Error('job cancelled');
    caller.abort(reason);
    await group.settle([group.run(stage)]);
    expect(group.signal.aborted).toBe(true);
    expect(() => group.throwIfFailed()).toThrow(reason);
  });

  it('runs a wake-up at once when it is registered after the stop, and halts without a failure', () => {
    const group = new StageGroup(undefined);
    group.halt();
    let woken = 0;
    group.onHalt(() => (woken += 1));
    expect(woken).toBe(1);
    expect(() => group.throwIfFailed()).not.toThrow();
  });

  it('lets go of the caller once settled', async () => {
    const caller = new AbortController();
    const group = new StageGroup(caller.signal);
    await group.settle([group.run(Promise.resolve())]);
    caller.abort(new Error('later'));
    expect(group.signal.aborted).toBe(false);
  });

  it("names the failure that counts after the caller's own flow broke", async () => {
    const group = new StageGroup(undefined);
    const stageError = new Error('audio decoder failed');
    const stage = group.run(rejected(stageError));
    await stage;
    // The flow was stopped by the stage's failure: the stage's failure is the one to report.
    expect(await group.failure(group.stopped, [stage])).toBe(stageError);
    const fresh = new StageGroup(undefined);
    const own = new Error('model missing');
    expect(await fresh.failure(own, [])).toBe(own);
  });
});
