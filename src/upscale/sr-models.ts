/**
 * Which super-resolution network serves which scale, and loading it: manifest, checksum-verified
 * file (converted on first use), then a cached ONNX Runtime session. The image and video pipelines
 * take the resulting loader, so neither knows about files or sessions.
 */
import { JobError } from '../jobs/index.js';
import { ensureModelFile, getManifest, ModelRegistryError, type RegistryOptions } from '../inference/model-registry.js';
import type { SessionCache } from '../inference/session.js';
import type { LoadedSrModel, SrModelLoader } from './image-pipeline.js';

/**
 * Default network per scale. Chosen for quality per second on the CPU (docs/benchmarks.md):
 * see scripts/bench-quality.ts and scripts/bench-image-speed.ts for the figures behind the choice:
 * slim gains the most dB over bicubic per second at both scales; thick x4 is the quality option.
 */
export const DEFAULT_SR_MODELS: Readonly<Record<2 | 4, string>> = {
  2: 'esrgan-slim-x2',
  4: 'esrgan-slim-x4',
};

export interface SrModelLoaderOptions extends RegistryOptions {
  sessions: SessionCache;
  /** Per-scale overrides of DEFAULT_SR_MODELS (settings). */
  defaults?: Partial<Record<2 | 4, string>>;
  /** Tile side override for every model (settings); default: the manifest's. */
  tile?: number;
  /** Tiles per network call override (settings); default: the manifest's. */
  batch?: number;
}

export function createSrModelLoader(options: SrModelLoaderOptions): SrModelLoader {
  const { sessions, defaults, tile, batch, ...registry } = options;
  return async (scale, name) => {
    const chosen = name ?? defaults?.[scale] ?? DEFAULT_SR_MODELS[scale];
    const manifest = await getManifest(chosen, registry).catch((err: unknown) => {
      if (err instanceof ModelRegistryError && name !== undefined) throw new JobError('INVALID_MODEL', err.message);
      throw err;
    });
    if (manifest.task !== 'super-resolution') {
      throw new JobError('INVALID_MODEL', `Expected a super-resolution model but ${chosen} is a ${manifest.task} model`);
    }
    if (manifest.scale !== scale) {
      throw new JobError('INVALID_MODEL', `Expected a x${scale} model but ${chosen} is x${manifest.scale}`);
    }
    const file = await ensureModelFile(chosen, registry);
    const session = await sessions.get(file.path);
    const loaded: LoadedSrModel = {
      name: chosen,
      model: { run: (input, dims) => session.run(input, dims), scale: manifest.scale, range: manifest.input.range },
      tiling: {
        tile: tile ?? manifest.tile.size,
        overlap: manifest.tile.overlap,
        batch: batch ?? manifest.tile.batch,
      },
    };
    return loaded;
  };
}
