/**
 * The stages of one pipeline (decoder, network, encoder, ...) that run together and stop together.
 * The first real failure, or the caller's abort, stops every stage at once: the group's signal
 * aborts with a PipelineStopped (a stop is never reported as a failure), and what was registered
 * with `onHalt` runs (queues wake their waiters, pipes close so no process waits on another). The
 * failure is kept and thrown once every stage has settled, so nothing outlives the call.
 *
 * Which failure is kept: the one of the highest rank, the first among equals. A process's own exit
 * explains a broken pipe better than the pipe does, so pipelines rank their ffmpeg processes above
 * the stages that feed and drain them.
 */

/** Stops the other stages; never reported (the cause is kept separately). */
export class PipelineStopped extends Error {
  constructor(what = 'pipeline') {
    super(`The ${what} was stopped`);
    this.name = 'PipelineStopped';
  }
}

export class StageGroup {
  /** The reason the group's signal carries when it stops. */
  readonly stopped: PipelineStopped;
  private readonly stop = new AbortController();
  private kept: { error: unknown; rank: number } | undefined;
  private readonly detach: () => void;

  /** `caller`: the job's signal; its abort stops the group and is what `throwIfFailed` rethrows. */
  constructor(
    private readonly caller: AbortSignal | undefined,
    what = 'pipeline',
  ) {
    this.stopped = new PipelineStopped(what);
    const onAbort = (): void => this.halt();
    caller?.addEventListener('abort', onAbort, { once: true });
    this.detach = () => caller?.removeEventListener('abort', onAbort);
    if (caller?.aborted === true) this.halt();
  }

  /** Aborts (with `stopped` as its reason) when the group stops: hand it to every stage and process. */
  get signal(): AbortSignal {
    return this.stop.signal;
  }

  /** Runs `wake` when the group stops, at once when it already has. */
  onHalt(wake: () => void): void {
    if (this.stop.signal.aborted) wake();
    else this.stop.signal.addEventListener('abort', wake, { once: true });
  }

  /** Stops every stage without a failure of its own (a pass that is no longer needed). */
  halt(): void {
    if (!this.stop.signal.aborted) this.stop.abort(this.stopped);
  }

  /** Keeps `error` (unless it is only the echo of a stop) and stops every stage. */
  fail(error: unknown, rank = 0): void {
    if (!this.isStop(error) && (this.kept === undefined || rank > this.kept.rank)) this.kept = { error, rank };
    this.halt();
  }

  /** A stage's promise: its rejection fails the group with `rank`. */
  run(stage: Promise<unknown>, rank = 0): Promise<void> {
    return stage.then(
      () => undefined,
      (error: unknown) => this.fail(error, rank),
    );
  }

  /** Waits for every stage to settle and lets go of the caller's signal. */
  async settle(stages: readonly Promise<unknown>[]): Promise<void> {
    await Promise.allSettled(stages);
    this.detach();
  }

  /** The caller's abort reason when it aborted, else the kept failure (through `explain`), else nothing. */
  throwIfFailed(explain: (error: unknown, rank: number) => unknown = (error) => error): void {
    if (this.caller?.aborted === true) throw this.caller.reason;
    if (this.kept !== undefined) throw explain(this.kept.error, this.kept.rank);
  }

  /**
   * The failure that counts once `error` broke the caller's own flow: fails the group with it, waits
   * for the `stages` running beside that flow, and returns the caller's abort reason, the first real
   * failure (a flow stopped by a stage's failure reports that one), or `error`.
   */
  async failure(error: unknown, stages: readonly Promise<unknown>[]): Promise<unknown> {
    this.fail(error);
    await Promise.allSettled(stages);
    if (this.caller?.aborted === true) return this.caller.reason;
    return this.kept?.error ?? error;
  }

  /** True for the group's own stop and for the caller's abort reason: echoes, not failures. */
  private isStop(error: unknown): boolean {
    return error === this.stopped || (this.caller?.aborted === true && error === this.caller.reason);
  }
}
