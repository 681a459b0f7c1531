/**
 * Sessions on worker threads of their own for networks of several inputs whose callers hold a
 * calling-thread SessionCache (the engine's `inlineSessions`) but run them on a thread, so that a
 * call does not hold the event loop (session-thread.ts). Each file is opened once, on its thread,
 * with the caller's cache's settings (providers and their fallback, threads, device, logger), and
 * the caller checks its contract on what that open reported (ThreadSession.graph): the weights are
 * never opened a second time on the calling thread. Idle, a thread keeps nothing alive; `release`
 * ends them (daemon shutdown, tests). A failed open is not kept, so the next caller tries again.
 */
import type { SessionCache, ThreadSession } from './session.js';

export class SessionThreadCache {
  /** Per caller's cache, a cache of the same settings whose sessions are on threads. */
  readonly #caches = new Map<SessionCache, SessionCache>();

  /** `modelPath`'s session on a thread, opened with `sessions`' settings on first use. */
  async get(sessions: SessionCache, modelPath: string): Promise<ThreadSession> {
    let onThreads = this.#caches.get(sessions);
    if (onThreads === undefined) {
      onThreads = sessions.onThreads();
      this.#caches.set(sessions, onThreads);
    }
    const session = await onThreads.get(modelPath);
    // Always true (onThreads() puts every session on a thread); it tells the compiler which session this is.
    if (!session.onThread) throw new Error(`Expected ${modelPath} to be opened on a worker thread`);
    return session;
  }

  /** Ends every thread this cache opened. */
  async release(): Promise<void> {
    const caches = [...this.#caches.values()];
    this.#caches.clear();
    await Promise.all(caches.map((cache) => cache.release()));
  }
}
