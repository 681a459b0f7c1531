/**
 * Sessions opened again on worker threads of their own, one per model file and the settings a
 * cached session ended up with (providers, threads, device), kept for the process: a network whose
 * session the cache opened on the calling thread (its contract checked there) runs on a thread so
 * that a call does not hold the event loop (session-thread.ts). Idle, a thread keeps nothing alive;
 * `release` ends them (daemon shutdown, tests). A failed open is not kept, so the next caller tries again.
 */
import { sessionOptions, type ModelSession } from './session.js';
import { SessionThread, type ThreadSessionInfo } from './session-thread.js';

export interface OpenedThread {
  thread: SessionThread;
  /** What the thread's session reported of its graph. */
  graph: ThreadSessionInfo;
}

export class SessionThreadCache {
  readonly #threads = new Map<string, Promise<OpenedThread>>();

  /** The thread serving `session`'s file with its settings, opened on first use. */
  get(session: ModelSession): Promise<OpenedThread> {
    const key = [session.modelPath, session.providers.join(','), session.threads, session.deviceIndex ?? 0].join('\0');
    let pending = this.#threads.get(key);
    if (pending === undefined) {
      pending = (async () => {
        const thread = new SessionThread(session.modelPath);
        try {
          return {
            thread,
            graph: await thread.open(sessionOptions(session.providers, session.threads, session.deviceIndex)),
          };
        } catch (error) {
          await thread.close();
          throw error;
        }
      })();
      this.#threads.set(key, pending);
      pending.catch(() => {
        if (this.#threads.get(key) === pending) this.#threads.delete(key);
      });
    }
    return pending;
  }

  /** Ends every thread this cache opened. */
  async release(): Promise<void> {
    const all = [...this.#threads.values()];
    this.#threads.clear();
    const opened = await Promise.allSettled(all);
    await Promise.all(opened.map((r) => (r.status === 'fulfilled' ? r.value.thread.close() : undefined)));
  }
}
