/**
 * WORKER_PRECISION applied to this host (inference/precision.ts decides, this reads the manifests
 * and runs the probe): a setting the provider cannot run is refused at start with a ConfigError
 * naming the variable; an int8 choice rewrites the super-resolution choices to the int8 manifests,
 * so the loader, the quotes and the estimates all see the graph that runs (float16 stays the
 * loader's `halfPrecision`, hardware.ts). Probed once, before the worker takes jobs.
 */
import { ConfigError, type Config } from '../config.js';
import {
  choosePrecision,
  ensureModelFile,
  getManifest,
  ModelRegistryError,
  precisionRefusal,
  probeVariant,
  type NetworkPrecision,
  type PrecisionProbe,
  type PrecisionSetting,
  type SuperResolutionManifest,
} from '../inference/index.js';
import { registryOptions } from './layer-options.js';

export interface PrecisionReport {
  requested: PrecisionSetting;
  networks: NetworkPrecision[];
}

export type VariantProber = (
  base: SuperResolutionManifest,
  variant: SuperResolutionManifest,
  config: Config,
  threads: number,
) => Promise<PrecisionProbe>;

/** Runs both graphs on this host (files made and verified by the registry first). */
export const probeOnHost: VariantProber = async (base, variant, config, threads) => {
  const registry = registryOptions(config);
  const [float32, reduced] = await Promise.all([
    ensureModelFile(base.name, registry),
    ensureModelFile(variant.name, registry),
  ]);
  return probeVariant(float32.path, reduced.path, threads);
};

/** A super-resolution manifest, or undefined where there is none of that name (a broken one throws). */
async function superResolution(name: string, config: Config): Promise<SuperResolutionManifest | undefined> {
  const manifest = await getManifest(name, registryOptions(config)).catch((err: unknown) => {
    if (err instanceof ModelRegistryError) return undefined;
    throw err;
  });
  return manifest?.task === 'super-resolution' ? manifest : undefined;
}

/** The precision of every configured super-resolution network, and the config that runs it; `threads`: what a job's network gets. */
export async function resolvePrecision(
  config: Config,
  provider: string,
  threads: number,
  probe: VariantProber = probeOnHost,
): Promise<{ config: Config; report: PrecisionReport }> {
  const requested = config.precision;
  const refusal = precisionRefusal(requested, provider);
  if (refusal !== null) throw new ConfigError(refusal);
  const setting = requested as Exclude<PrecisionSetting, 'bf16'>;
  const networks: NetworkPrecision[] = [];
  for (const name of new Set(Object.values(config.srModels))) {
    const base = await superResolution(name, config);
    // A network without a manifest fails where it is loaded, with the loader's message.
    if (base === undefined) continue;
    if (base.source.kind === 'int8') {
      // An int8 graph named in MEDIA_WORKER_SR_MODELS: the operator's choice, held to the provider's rule.
      const refused = precisionRefusal('int8', provider);
      if (refused !== null) throw new ConfigError(`${refused} (MEDIA_WORKER_SR_MODELS names ${name})`);
      networks.push({
        network: base.source.of,
        graph: name,
        precision: 'int8',
        reason: 'named in MEDIA_WORKER_SR_MODELS',
      });
      continue;
    }
    const variant = base.int8 === undefined ? undefined : await superResolution(base.int8, config);
    const measured =
      setting === 'auto' && provider === 'cpu' && variant?.gate?.passes === true
        ? await probe(base, variant, config, threads)
        : undefined;
    networks.push(choosePrecision(setting, provider, base, variant, measured));
  }
  const int8 = new Map(networks.filter((n) => n.precision === 'int8').map((n) => [n.network, n.graph]));
  const srModels = Object.fromEntries(
    Object.entries(config.srModels).map(([use, name]) => [use, int8.get(name) ?? name]),
  );
  return { config: { ...config, srModels }, report: { requested, networks } };
}
