/**
 * One task at a time per key, in arrival order: the gateway's writes to one account's ledger wait
 * for each other instead of racing on "expected last subject sequence". The server is meant to
 * settle such races, but on clustered streams nats-server 2.9 lets concurrent writers with the
 * same expectation through (nats-io/nats-server#4320); serialising here removes them within one
 * gateway and costs nothing that a retry after a conflict would not have cost. An account's
 * uploads use it too, so a quota check and its write are not raced by the same account.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    // The map keeps only keys with work queued.
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
