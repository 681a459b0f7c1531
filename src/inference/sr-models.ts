/**
 * Loading the super-resolution network for a use: the choice (sr-choice.ts: settings over the
 * defaults, or the caller's explicit name), its manifest, the checksum-verified file (converted on
 * first use), then a cached ONNX Runtime session. The pipelines that upscale take the
 * resulting loader, so none of them knows about files or sessions. Failures the job's owner caused
 * (a `--model` that is no super-resolution network, or too small a scale) are INVALID_MODEL.
 */
import { JobError } from '../errors.js';
import { ensureModelFile, getManifest, ModelRegistryError, type RegistryOptions } from './model-registry.js';
import type { SessionCache } from './session.js';
import { chooseSrModel, parseSrModelChoices, type SrFactor, type SrModelChoices, type SrUse } from './sr-choice.js';
import { tileSizeForBudget } from './tile-budget.js';
import type { SrModel, UpscaleOptions } from './tiling.js';
import type { SuperResolutionManifest } from './manifest.js';
import { definedFields } from '../defined-fields.js';

/** A loaded network and the tile settings to run it with. */
export interface LoadedSrModel {
  name: string;
  model: SrModel;
  tiling: Pick<UpscaleOptions, 'tile' | 'overlap' | 'batch' | 'feather'>;
}

/** Finds the network for a use and factor (sr-choice.ts), by name when the caller insists on one. */
export type SrModelLoader = (use: SrUse, factor: SrFactor, name?: string) => Promise<LoadedSrModel>;

export interface SrModelLoaderOptions extends RegistryOptions {
  sessions: SessionCache;
  /** Which network serves each use and factor (settings); default: sr-choice.ts's defaults. */
  choices?: SrModelChoices;
  /** Tile side override for every model (settings); default: the manifest's. */
  tile?: number;
  /** Tiles per network call override (settings); default: the manifest's. */
  batch?: number;
  /** Bytes one network call may use: sets the tile size with the manifest's bytes per pixel (tile-budget.ts). */
  tileMemoryBytes?: number;
  /** Run a network's float16 variant (manifest `halfPrecision`) where it has one: GPU providers. */
  halfPrecision?: boolean;
}

/** The tile side a network runs with under a memory budget; the cost model asks the same question. */
export function budgetTile(
  manifest: Pick<SuperResolutionManifest, 'tile'>,
  tileMemoryBytes: number | undefined,
): number {
  return tileSizeForBudget({
    ...definedFields({ budgetBytes: tileMemoryBytes, bytesPerPixel: manifest.tile.bytesPerPixel }),
    overlap: manifest.tile.overlap,
    fallback: manifest.tile.size,
  });
}

export function createSrModelLoader(options: SrModelLoaderOptions): SrModelLoader {
  const {
    sessions,
    choices = parseSrModelChoices(''),
    tile,
    batch,
    tileMemoryBytes,
    halfPrecision = false,
    ...registry
  } = options;
  return async (use, factor, name) => {
    const chosen = name ?? chooseSrModel(choices, use, factor);
    const manifest = await getManifest(chosen, registry).catch((err: unknown) => {
      if (err instanceof ModelRegistryError && name !== undefined) throw new JobError('INVALID_MODEL', err.message);
      throw err;
    });
    if (manifest.task !== 'super-resolution') {
      throw new JobError(
        'INVALID_MODEL',
        `Expected a super-resolution model but ${chosen} is a ${manifest.task} model`,
      );
    }
    if (manifest.scale < minimumScale(factor)) {
      throw new JobError(
        'INVALID_MODEL',
        `Expected a model of scale ${minimumScale(factor)} or more for upscale_factor "${factor}" but ${chosen} is x${manifest.scale}`,
      );
    }
    // The float16 variant is the same network: the tile, scale and range stay the full-precision manifest's.
    const file = await ensureModelFile(
      halfPrecision && manifest.halfPrecision !== undefined ? manifest.halfPrecision : chosen,
      registry,
    );
    const session = await sessions.get(file.path);
    const loaded: LoadedSrModel = {
      name: chosen,
      model: { run: (input, dims) => session.run(input, dims), scale: manifest.scale, range: manifest.input.range },
      tiling: {
        tile: tile ?? budgetTile(manifest, tileMemoryBytes),
        overlap: manifest.tile.overlap,
        batch: batch ?? manifest.tile.batch,
      },
    };
    return loaded;
  };
}

/** A network scales by at least the factor; the pipelines bring anything larger down to the target size. */
function minimumScale(factor: SrFactor): number {
  return Math.max(2, Number(factor));
}
