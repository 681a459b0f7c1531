/**
 * What this worker answers on `media.capabilities` (docs/protocol.md, "Discovery"): its kinds with
 * slots, readiness and reasons, the models of its ready kinds, its hardware class and execution
 * provider, package and protocol versions. The message and the client side ("who can run X") are
 * protocol/discovery.ts.
 */
import { JOB_KINDS, type JobKind } from '../jobs/index.js';
import {
  PROTOCOL_VERSION,
  modelsOfKind,
  type BackendCapability,
  type Capabilities,
  type DeviceInfo,
} from '../protocol/index.js';
import type { KindStatus } from './availability.js';
import type { WorkerState } from './types.js';

export interface HostFacts {
  worker: string;
  instance: string;
  version: string;
  hardwareClass?: string | undefined;
  executionProvider?: string | undefined;
  /** The device the networks run on (GPU index, name, memory; or the CPU). */
  device?: DeviceInfo | undefined;
  /** Which graph each super-resolution network runs (WORKER_PRECISION). */
  precision?: Capabilities['precision'];
  /** Each kind's backends as their last readiness check found them (kinds with backends only). */
  backends?: (() => Partial<Record<JobKind, BackendCapability[]>>) | undefined;
}

/** What this host announces, from its state and each kind's readiness. */
export function capabilities(
  host: HostFacts,
  state: WorkerState,
  kinds: Readonly<Record<JobKind, KindStatus>>,
  now: Date,
): Capabilities {
  const running = state === 'running';
  const perKind = {} as Capabilities['kinds'];
  const backends = host.backends?.() ?? {};
  for (const kind of JOB_KINDS) {
    const status = kinds[kind];
    const reasons = running || status.slots === 0 ? [...status.reasons] : [`worker is ${state}`, ...status.reasons];
    if (status.slots === 0) reasons.unshift('not served by this host (WORKER_CONCURRENCY)');
    const kindBackends = backends[kind];
    perKind[kind] = {
      slots: status.slots,
      ready: running && status.ready,
      reasons,
      models: modelsOfKind(kind),
      ...(kindBackends === undefined ? {} : { backends: kindBackends }),
    };
  }
  return {
    worker: host.worker,
    instance: host.instance,
    version: host.version,
    protocol: PROTOCOL_VERSION,
    // A failed worker's connection is closed: it answers nobody, and the wire knows no such state.
    state: state === 'failed' ? 'stopped' : state,
    hardwareClass: host.hardwareClass ?? null,
    executionProvider: host.executionProvider ?? null,
    ...(host.device === undefined ? {} : { device: host.device }),
    ...(host.precision === undefined ? {} : { precision: host.precision }),
    kinds: perKind,
    models: JOB_KINDS.flatMap((kind) => (perKind[kind].ready ? perKind[kind].models : [])),
    at: now.toISOString(),
  };
}
