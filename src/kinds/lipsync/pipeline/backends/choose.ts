/**
 * Which configured lip-sync backend serves a job: the first, in the operator's order
 * (MEDIA_WORKER_LIPSYNC_BACKENDS), that serves its model and is ready; and the readiness summary
 * /readyz and capabilities report, backend by backend. Pure but for the readiness calls.
 */
import type { LipsyncModelId } from '../../../../jobs/index.js';
import type { BackendReadiness, LipsyncBackend } from './types.js';

export interface BackendStatus {
  name: string;
  ready: boolean;
  /** The model ids it serves (ready or not). */
  models: LipsyncModelId[];
  reason?: string;
}

async function readinessOf(backend: LipsyncBackend, signal?: AbortSignal): Promise<BackendReadiness> {
  return backend.readiness(signal).catch((err: unknown) => ({ ready: false as const, reason: (err as Error).message }));
}

export interface LipsyncChoice {
  backend?: LipsyncBackend;
  /** One line per backend passed over, for the failure message and the log. */
  passed: string[];
}

export async function chooseLipsyncBackend(
  backends: readonly LipsyncBackend[],
  model: LipsyncModelId,
  signal?: AbortSignal,
): Promise<LipsyncChoice> {
  const passed: string[] = [];
  for (const backend of backends) {
    if (!backend.models().includes(model)) {
      passed.push(`${backend.name} does not serve ${model}`);
      continue;
    }
    const r = await readinessOf(backend, signal);
    if (r.ready) return { backend, passed };
    passed.push(`${backend.name}: ${r.reason}`);
  }
  return { passed };
}

export interface LipsyncReadiness {
  /** At least one backend is ready. */
  ready: boolean;
  backends: BackendStatus[];
  /** One line when none is. */
  reason?: string;
}

export async function lipsyncReadiness(
  backends: readonly LipsyncBackend[],
  signal?: AbortSignal,
): Promise<LipsyncReadiness> {
  if (backends.length === 0)
    return { ready: false, backends: [], reason: 'no lip-sync backend configured (MEDIA_WORKER_LIPSYNC_BACKENDS)' };
  const each = await Promise.all(
    backends.map(async (b): Promise<BackendStatus> => {
      const r = await readinessOf(b, signal);
      const models = [...b.models()];
      return r.ready ? { name: b.name, ready: true, models } : { name: b.name, ready: false, models, reason: r.reason };
    }),
  );
  const ready = each.some((b) => b.ready);
  return ready
    ? { ready, backends: each }
    : { ready, backends: each, reason: each.map((b) => `${b.name}: ${b.reason ?? 'not ready'}`).join('; ') };
}
