/**
 * deploy/kubernetes/ read as the API server and KEDA read it, for the tests: every YAML document,
 * and per container the environment it gets (ConfigMaps through envFrom, then its own env; values
 * from Secrets and the downward API stand in as placeholders of a valid shape).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { PACKAGE_ROOT } from '../../src/paths.js';

export const KUBERNETES_DIR = path.join(PACKAGE_ROOT, 'deploy', 'kubernetes');

/** A parsed manifest: only the fields the tests read are typed. */
export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  data?: Record<string, string>;
  spec?: Record<string, unknown>;
  file: string;
}

export interface EnvEntry {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: unknown; fieldRef?: unknown; configMapKeyRef?: unknown };
}

export interface Container {
  name: string;
  args?: string[];
  env?: EnvEntry[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { limits?: Record<string, string | number>; requests?: Record<string, string | number> };
}

export interface Probe {
  httpGet?: { path: string; port: string | number };
}

export interface PodSpec {
  terminationGracePeriodSeconds?: number;
  containers: Container[];
}

/** Every document of every .yaml file; a YAML error fails the read. */
export async function readManifests(): Promise<Manifest[]> {
  const files = (await readdir(KUBERNETES_DIR)).filter((f) => f.endsWith('.yaml')).sort();
  const out: Manifest[] = [];
  for (const file of files) {
    const docs = parseAllDocuments(await readFile(path.join(KUBERNETES_DIR, file), 'utf8'));
    if (!Array.isArray(docs)) throw new Error(`Expected YAML documents in ${file}`);
    for (const doc of docs) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
      const value = doc.toJS() as Omit<Manifest, 'file'> | null;
      if (value !== null) out.push({ ...value, file });
    }
  }
  return out;
}

export function podSpec(m: Manifest): PodSpec {
  const template = (m.spec as { template?: { spec?: PodSpec } } | undefined)?.template?.spec;
  if (template === undefined) throw new Error(`Expected ${m.kind} ${m.metadata.name} to have spec.template.spec`);
  return template;
}

/** Placeholders of a valid shape for values the cluster supplies. */
const SECRET_PLACEHOLDER = 'x'.repeat(40);
const FIELD_PLACEHOLDER = 'media-worker-image-7d9f8-abcde';

/** The container's environment: envFrom ConfigMaps first, its own env after (which wins, as in Kubernetes). */
export function containerEnv(container: Container, manifests: Manifest[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    const name = source.configMapRef?.name;
    const map = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name === name);
    if (map === undefined) throw new Error(`Expected a ConfigMap named ${String(name)} in deploy/kubernetes/`);
    Object.assign(env, map.data);
  }
  for (const entry of container.env ?? []) {
    if (entry.value !== undefined) env[entry.name] = String(entry.value);
    else if (entry.valueFrom?.secretKeyRef !== undefined) env[entry.name] = SECRET_PLACEHOLDER;
    else if (entry.valueFrom?.fieldRef !== undefined) env[entry.name] = FIELD_PLACEHOLDER;
    else throw new Error(`Expected ${entry.name} to have a value, a secretKeyRef or a fieldRef`);
  }
  return env;
}
