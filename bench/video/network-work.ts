/**
 * Network work counted: a super-resolution loader whose networks count the tiles they run, so a
 * benchmark or a test can say how much of a job's network work was done (before a failure, say).
 */
import { srModel, type SrModelLoader } from '../../src/inference/index.js';

export interface CountingLoader {
  load: SrModelLoader;
  /** Tiles run by every network this loader handed out, since it was made (or `reset`). */
  tiles(): number;
  reset(): void;
}

export function countingLoader(inner: SrModelLoader): CountingLoader {
  let tiles = 0;
  return {
    load: async (use, factor, name) => {
      const loaded = await inner(use, factor, name);
      const { model } = loaded;
      const runner = {
        run: (input: Float32Array, dims: Parameters<typeof model.run>[1]) => {
          tiles += dims[0];
          return model.run(input, dims);
        },
      };
      return { ...loaded, model: srModel(runner, model.scale, model.range) };
    },
    tiles: () => tiles,
    reset: () => {
      tiles = 0;
    },
  };
}
