/**
 * Discovery on the wire (docs/protocol.md, "Discovery"): every live worker answers
 * `media.capabilities` (no queue group, so all of them reply) with what it can run now. "Who can
 * run X" is a scatter-gather request: collect the replies for a moment and keep those whose kind is
 * ready. The worker's answer is built in worker/discovery.ts.
 */
import { createInbox, type NatsConnection } from '@nats-io/transport-node';
import { z } from 'zod';
import { JOB_KINDS, modelsOfKind, type JobKind } from '../jobs/index.js';

export const backendCapabilitySchema = z.object({
  name: z.string(),
  ready: z.boolean(),
  models: z.array(z.string()),
  /** Why not ready (a missing key, weights, a licence that forbids commercial use). */
  reason: z.string().optional(),
});

export type BackendCapability = z.infer<typeof backendCapabilitySchema>;

const kindCapabilitySchema = z.object({
  /** Jobs of the kind this host runs at once (WORKER_CONCURRENCY); 0: not served here. */
  slots: z.number().int().nonnegative(),
  /** Pulled now: slots configured, the worker running, every readiness check passing. */
  ready: z.boolean(),
  /** Why not, one entry per failing check (`<check>: <reason>`), or the worker's state. */
  reasons: z.array(z.string()),
  /** Model ids of the kind. */
  models: z.array(z.string()),
  /**
   * The kind's backends in the operator's order (its backends setting), as
   * their last readiness check found them: which model ids each serves, ready or why not. A job
   * goes to the first ready one that serves its model. Absent for kinds without backends, and from
   * workers that predate it.
   */
  backends: z.array(backendCapabilitySchema).optional(),
});

/** The device a worker's networks run on (docs/operations.md, "Hosts with many GPUs"). */
export const deviceSchema = z.object({
  kind: z.enum(['gpu', 'cpu']),
  /** The execution provider that runs (`cpu`, `cuda`, ...). */
  provider: z.string(),
  /** GPU index (MEDIA_WORKER_DEVICE_INDEX, as nvidia-smi numbers them); null on the CPU and on WebGPU. */
  index: z.number().int().nonnegative().nullable(),
  name: z.string().nullable(),
  /** Memory of the GPU (of the host, on the CPU), MiB; null when unknown. */
  memoryMb: z.number().nonnegative().nullable(),
  /** Why something is unknown, or what to know about it. */
  note: z.string().optional(),
});

export type DeviceInfo = z.infer<typeof deviceSchema>;

export const capabilitiesSchema = z.object({
  /** NATS connection name (NATS_CONNECTION_NAME), as in events' `worker`. */
  worker: z.string(),
  /** The services framework's instance id (as in `$SRV.INFO`). */
  instance: z.string(),
  /** Package version of media-worker. */
  version: z.string(),
  /** Wire protocol version (`major.minor`). */
  protocol: z.string(),
  state: z.enum(['starting', 'running', 'draining', 'stopped']),
  /** The hardware class its quotes estimate with (`cpu`, `h100`); null when the host did not say. */
  hardwareClass: z.string().nullable(),
  /** The ONNX Runtime execution provider in use (`cpu`, `cuda`, ...); null when none was opened. */
  executionProvider: z.string().nullable(),
  /** The device its networks run on; absent from workers that predate it. */
  device: deviceSchema.optional(),
  /**
   * Which graph each super-resolution network runs (WORKER_PRECISION): the setting, and per network
   * the manifest that runs, its precision and why; absent from workers that predate it.
   */
  precision: z
    .object({
      requested: z.string(),
      networks: z.array(
        z.object({
          network: z.string(),
          graph: z.string(),
          precision: z.enum(['fp32', 'fp16', 'int8']),
          reason: z.string(),
        }),
      ),
    })
    .optional(),
  kinds: z.object(
    Object.fromEntries(JOB_KINDS.map((kind) => [kind, kindCapabilitySchema])) as Record<
      JobKind,
      typeof kindCapabilitySchema
    >,
  ),
  /** Model ids this host can run now (those of its ready kinds). */
  models: z.array(z.string()),
  at: z.string(),
});

export type Capabilities = z.infer<typeof capabilitiesSchema>;

export { modelsOfKind };

export interface DiscoverOptions {
  /**
   * The asker's reply-inbox prefix (NATS_INBOX_PREFIX): under per-role users (deploy/nats/) a role
   * may subscribe only to its own inboxes, so the default `_INBOX` would be refused.
   */
  inboxPrefix: string;
  /** How long to collect replies (default 500 ms). */
  waitMs?: number;
  /** Stop as soon as a reply satisfies this. */
  until?: (worker: Capabilities) => boolean;
}

/**
 * Asks every live worker for its capabilities (scatter-gather on `media.capabilities`): the replies
 * that arrived within `waitMs`, or up to the first that satisfies `until`. Replies that are not
 * capabilities (another protocol major) are skipped.
 */
export async function discoverWorkers(
  nc: NatsConnection,
  subject: string,
  options: DiscoverOptions,
): Promise<Capabilities[]> {
  const inbox = createInbox(options.inboxPrefix);
  const found: Capabilities[] = [];
  const sub = nc.subscribe(inbox);
  const timer = setTimeout(() => sub.unsubscribe(), options.waitMs ?? 500);
  try {
    nc.publish(subject, '', { reply: inbox });
    for await (const msg of sub) {
      const parsed = capabilitiesSchema.safeParse(parseJson(msg.data));
      if (!parsed.success) continue;
      found.push(parsed.data);
      if (options.until?.(parsed.data)) break;
    }
  } finally {
    clearTimeout(timer);
    sub.unsubscribe();
  }
  return found;
}

/** The live workers that can run `kind` now. */
export async function whoCanRun(
  nc: NatsConnection,
  subject: string,
  kind: JobKind,
  options: Omit<DiscoverOptions, 'until'> & { first?: boolean },
): Promise<Capabilities[]> {
  const ready = (w: Capabilities): boolean => w.kinds[kind].ready;
  const all = await discoverWorkers(nc, subject, { ...options, ...(options.first ? { until: ready } : {}) });
  return all.filter(ready);
}

function parseJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(data)) as unknown;
  } catch {
    return undefined;
  }
}
