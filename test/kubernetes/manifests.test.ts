/**
 * deploy/kubernetes/: the manifests parse, every variable they set is a setting some table reads
 * with a value its parser accepts, the workers stop within their grace, and KEDA scales each kind's
 * Deployment on that kind's consumer with only the scaler's documented fields.
 */
import { describe, expect, it } from 'vitest';
import { knownSettingNames, SETTINGS_SECTIONS } from '../../src/config.js';
import { JOB_KINDS } from '../../src/jobs/index.js';
import { consumerName } from '../../src/protocol/index.js';
import { workerSettingsFromEnv } from '../../src/worker/settings.js';
import { containerEnv, podSpec, readManifests, type Container, type Manifest } from './manifests.js';

const manifests = await readManifests();
const deployments = manifests.filter((m) => m.kind === 'Deployment');
const workers = deployments.filter((m) => podSpec(m).containers.some((c) => c.args?.[0] === 'serve'));
const scaledObjects = manifests.filter((m) => m.kind === 'ScaledObject');
const jobs = manifests.filter((m) => m.kind === 'Job');

/** The scaler's metadata fields (KEDA docs, scalers/nats-jetstream, 2.8 to the latest). */
const SCALER_FIELDS = [
  'natsServerMonitoringEndpoint',
  'account',
  'stream',
  'consumer',
  'lagThreshold',
  'activationLagThreshold',
  'useHttps',
];

function worker(m: Manifest): Container {
  const c = podSpec(m).containers.find((x) => x.args?.[0] === 'serve');
  if (c === undefined) throw new Error(`Expected a serve container in ${m.metadata.name}`);
  return c;
}

describe('deploy/kubernetes', () => {
  it('parses: a worker Deployment per kind, a gateway, a ScaledObject per kind', () => {
    expect(manifests.length).toBeGreaterThan(0);
    for (const m of manifests) {
      expect(m.apiVersion, `${m.file}`).toBeTruthy();
      expect(m.metadata.name, `${m.file} ${m.kind}`).toBeTruthy();
    }
    expect(workers.length).toBeGreaterThanOrEqual(JOB_KINDS.length);
    expect(deployments.some((m) => podSpec(m).containers.some((c) => c.args?.[0] === 'gateway'))).toBe(true);
    expect(
      scaledObjects.map((s) => (s.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name).sort(),
    ).toEqual(JOB_KINDS.map((k) => `media-worker-${k}`).sort());
  });

  it('sets only settings that exist, with values every command accepts', () => {
    const known = new Set(knownSettingNames());
    for (const m of [...deployments, ...jobs]) {
      for (const c of podSpec(m).containers) {
        const env = containerEnv(c, manifests);
        expect(Object.keys(env).length, m.metadata.name).toBeGreaterThan(0);
        expect(
          Object.keys(env).filter((name) => !known.has(name)),
          m.metadata.name,
        ).toEqual([]);
        for (const section of SETTINGS_SECTIONS)
          expect(() => section.load(env), `${m.metadata.name}: ${section.key}`).not.toThrow();
      }
    }
  });

  it('the operator provisions in a Job; each worker Deployment is a NATS host of its own (docs/operations.md)', () => {
    const provision = jobs.filter((m) => podSpec(m).containers.some((c) => c.args?.[0] === 'provision'));
    expect(provision).toHaveLength(1);
    expect(containerEnv(podSpec(provision[0]!).containers[0]!, manifests)['NATS_USER']).toBe('operator');
    const hosts = workers.map((m) => containerEnv(worker(m), manifests)['WORKER_HOST_ID']);
    expect(hosts.every((h) => h !== undefined)).toBe(true);
    expect(new Set(hosts).size).toBe(workers.length);
    for (const m of workers) {
      const env = containerEnv(worker(m), manifests);
      expect(env['NATS_USER'], m.metadata.name).toBe(`worker-${env['WORKER_HOST_ID']}`);
    }
  });

  it('a worker pod stops within its grace: drain grace plus publish deadline, a preStop that waits for the drain', () => {
    for (const m of workers) {
      const spec = podSpec(m);
      const settings = workerSettingsFromEnv(containerEnv(worker(m), manifests));
      const graceMs = (spec.terminationGracePeriodSeconds ?? 30) * 1000;
      expect(graceMs, m.metadata.name).toBeGreaterThanOrEqual(settings.drainGraceMs + settings.publishDeadlineMs);
      const preStop = worker(m).lifecycle?.preStop?.exec?.command.join(' ') ?? '';
      if (m.metadata.name === 'media-worker-quote') continue;
      // SIGTERM to the worker, then wait for it: the kubelet's own SIGTERM must not be a second signal mid-drain.
      expect(preStop, m.metadata.name).toMatch(/kill -TERM 1\b/);
      expect(preStop, m.metadata.name).toMatch(/while kill -0 1\b/);
    }
  });

  it('probes /readyz and /healthz on the health port; one GPU per GPU pod', () => {
    for (const m of workers) {
      const c = worker(m);
      const env = containerEnv(c, manifests);
      const port = Number(env['WORKER_HEALTH_PORT'] ?? 9464);
      const named = (p: string | number | undefined): number =>
        typeof p === 'number' ? p : (c.ports?.find((x) => x.name === p)?.containerPort ?? NaN);
      expect(named(c.livenessProbe?.httpGet?.port), m.metadata.name).toBe(port);
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      const served = workerSettingsFromEnv(env).concurrency;
      const servesAny = Object.values(served).some((n) => n > 0);
      if (servesAny) {
        expect(c.readinessProbe?.httpGet?.path, m.metadata.name).toBe('/readyz');
        expect(named(c.readinessProbe?.httpGet?.port)).toBe(port);
      } else {
        // A quotes-only pod is never "ready" (no kind pulled): a readiness probe would keep it failing.
        expect(c.readinessProbe, m.metadata.name).toBeUndefined();
      }
      const providers = env['MEDIA_WORKER_EXECUTION_PROVIDERS'] ?? 'cpu';
      const gpus = c.resources?.limits?.['nvidia.com/gpu'];
      if (/cuda|tensorrt|webgpu/.test(providers)) expect(Number(gpus), m.metadata.name).toBe(1);
      else expect(gpus, m.metadata.name).toBeUndefined();
    }
  });

  it("each kind scales on its own consumer of the jobs stream, with the scaler's documented fields only", () => {
    for (const kind of JOB_KINDS) {
      const target = workers.find((m) => m.metadata.name === `media-worker-${kind}`);
      expect(target, kind).toBeDefined();
      const settings = workerSettingsFromEnv(containerEnv(worker(target!), manifests));
      // The Deployment serves that kind and no other.
      expect(
        Object.entries(settings.concurrency)
          .filter(([, n]) => n > 0)
          .map(([k]) => k),
      ).toEqual([kind]);
      const so = scaledObjects.find(
        (s) => (s.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name === target!.metadata.name,
      )!;
      const spec = so.spec as {
        minReplicaCount?: number;
        maxReplicaCount?: number;
        triggers: { type: string; metadata: Record<string, string> }[];
      };
      expect(spec.triggers).toHaveLength(1);
      const [trigger] = spec.triggers;
      expect(trigger!.type).toBe('nats-jetstream');
      expect(Object.keys(trigger!.metadata).filter((f) => !SCALER_FIELDS.includes(f))).toEqual([]);
      expect(trigger!.metadata['stream']).toBe(settings.jobsStream);
      expect(trigger!.metadata['consumer']).toBe(consumerName(settings.consumerPrefix, kind));
      expect(trigger!.metadata['account']).toBe('$G');
      expect(Number(trigger!.metadata['lagThreshold'])).toBeGreaterThan(0);
      expect(spec.maxReplicaCount ?? 100).toBeGreaterThanOrEqual(spec.minReplicaCount ?? 0);
    }
  });

  it('some worker answers quotes while the GPU Deployments are at zero, pricing as the GPU fleet', () => {
    const quoting = workers.filter((m) => ((m.spec as { replicas?: number }).replicas ?? 1) > 0);
    expect(quoting.length).toBeGreaterThan(0);
    for (const m of quoting) {
      const env = containerEnv(worker(m), manifests);
      expect(workerSettingsFromEnv(env).quoteUnserved, m.metadata.name).toBe('price');
      expect(env['MEDIA_WORKER_HARDWARE_CLASS'], m.metadata.name).toBe('h100');
    }
  });
});
