/**
 * What an operator watches of the whole deployment, read from NATS when /metrics is scraped
 * (deploy/observability/ builds its queue, webhook and poll-view panels and alerts on them):
 *
 * - the work queue by kind: how many jobs it holds (one stream info with per-subject counts) and
 *   how old its oldest one is (one read of the kind's first stored job). The gateway may read the
 *   queue (it writes it and settles exhausted jobs); workers may not, so this is the gateway's.
 * - the webhook backlog: the deliveries its shared durable has not finished.
 * - the poll view: whether each family's watch is live.
 *
 * Every gateway reports the same queue and backlog; dashboards take the max over gateways.
 */
import type { JetStreamManager, StoredMsg } from '@nats-io/jetstream';
import { JOB_KINDS, type JobKind } from '../../jobs/index.js';
import { JOBS_SUBJECT_PREFIX, kindOfJobSubject } from '../../protocol/index.js';
import type { GatewayMetrics } from './metrics.js';

export interface FleetSources {
  jsm: JetStreamManager;
  jobsStream: string;
  webhooks: { stream: string; durable: string };
  /** Each poll-view family's watch: live now or not. */
  viewLive(): Record<string, boolean>;
}

/** Pure: jobs per kind from the stream's per-subject counts (`media.jobs.<kind>.<model>`). */
export function depthByKind(subjects: Readonly<Record<string, number>>): Record<JobKind, number> {
  const depth = Object.fromEntries(JOB_KINDS.map((k) => [k, 0])) as Record<JobKind, number>;
  for (const [subject, count] of Object.entries(subjects)) {
    const kind = kindOfJobSubject(subject);
    if (kind !== undefined) depth[kind] += count;
  }
  return depth;
}

export function watchFleet(metrics: GatewayMetrics, sources: FleetSources): void {
  const { jsm, jobsStream } = sources;
  metrics.samplers.queue = async () => {
    const info = await jsm.streams.info(jobsStream, { subjects_filter: `${JOBS_SUBJECT_PREFIX}.>` }).catch(() => null);
    if (info === null) return;
    const depth = depthByKind(info.state.subjects ?? {});
    const now = Date.now();
    for (const kind of JOB_KINDS) {
      metrics.queueDepth.set({ kind }, depth[kind]);
      let oldest: StoredMsg | null = null;
      if (depth[kind] > 0) {
        // `next_by_subj` is the server's (2.9+) message-get request; the client's type names only seq and last_by_subj.
        const first = { seq: info.state.first_seq, next_by_subj: `${JOBS_SUBJECT_PREFIX}.${kind}.>` } as unknown as {
          seq: number;
        };
        oldest = await jsm.streams.getMessage(jobsStream, first).catch(() => null);
      }
      metrics.queueOldestAge.set({ kind }, oldest === null ? 0 : Math.max(0, (now - oldest.time.getTime()) / 1000));
    }
  };
  metrics.samplers.webhooks = async () => {
    const info = await jsm.consumers.info(sources.webhooks.stream, sources.webhooks.durable).catch(() => null);
    if (info !== null) metrics.webhookBacklog.set(info.num_pending + info.num_ack_pending);
  };
  metrics.samplers.view = () => {
    for (const [family, live] of Object.entries(sources.viewLive())) metrics.viewLive.set({ family }, live ? 1 : 0);
    return Promise.resolve();
  };
}
