/**
 * The worker's lifecycle, explicit: which state follows which event, and what /healthz and /readyz
 * say in each.
 *
 *   starting ──started──► running ──drain──► draining ──drained──► stopped
 *       │                    │
 *       └──────closed────────┴──► failed     (the NATS connection closed for good: credentials
 *                                             revoked, the server refused us; `stopped` rejects)
 *
 * A failure while starting makes startWorker reject: no handle is returned. A connection that
 * closes while draining is the drain's own end, not a failure.
 */
export type WorkerState = 'starting' | 'running' | 'draining' | 'stopped' | 'failed';

export type LifecycleEvent = 'started' | 'drain' | 'drained' | 'closed';

const NEXT: Readonly<Record<WorkerState, Partial<Record<LifecycleEvent, WorkerState>>>> = {
  starting: { started: 'running', closed: 'failed' },
  running: { drain: 'draining', closed: 'failed' },
  draining: { drained: 'stopped' },
  stopped: {},
  failed: {},
};

/** The state after `event`; an event a state does not expect leaves it as it is. */
export function nextState(state: WorkerState, event: LifecycleEvent): WorkerState {
  return NEXT[state][event] ?? state;
}

/** Alive for /healthz: not yet ended, by a drain or a failure. */
export function isLive(state: WorkerState): boolean {
  return state !== 'stopped' && state !== 'failed';
}
