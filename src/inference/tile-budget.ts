/**
 * The tile side a memory budget allows. A network call's memory grows with its tile's pixels (the
 * activations of every layer at the tile's size), so the manifest records the bytes one tile input
 * pixel takes (measured: bench/inference/tile-memory.ts) and the budget divided by it bounds the tile's area.
 * Larger tiles recompute less of their overlap: Real-ESRGAN x4plus needs 80 context pixels on each
 * inner side, which 512-pixel tiles spend half their work on and 1536-pixel ones a tenth. Pure.
 */
import { TILE_ALIGN } from './tile-plan.js';

/** Largest tile side a budget may choose: past it a 12 MP photo is one or two tiles already. */
export const MAX_BUDGET_TILE = 4096;

export interface TileBudgetRequest {
  /** Bytes one network call may use; undefined or 0: no budget, `fallback` decides. */
  budgetBytes?: number;
  /** The network's memory per tile input pixel (manifest `tile.bytesPerPixel`); undefined: `fallback`. */
  bytesPerPixel?: number;
  /** Context pixels each inner tile side discards: a tile must be larger than twice this plus the feather bands. */
  overlap: number;
  /** The manifest's tile size, used when there is no budget or no measured figure. */
  fallback: number;
}

/**
 * The largest multiple of TILE_ALIGN whose square fits the budget, at most MAX_BUDGET_TILE and at
 * least the smallest tile the overlap leaves room in (a budget too small for that gets that tile:
 * the out-of-memory backoff in tiling.ts has the last word).
 */
export function tileSizeForBudget(request: TileBudgetRequest): number {
  const { budgetBytes, bytesPerPixel, overlap, fallback } = request;
  if (budgetBytes === undefined || budgetBytes <= 0 || bytesPerPixel === undefined || bytesPerPixel <= 0)
    return fallback;
  const side = Math.floor(Math.sqrt(budgetBytes / bytesPerPixel) / TILE_ALIGN) * TILE_ALIGN;
  const smallest = Math.ceil((2 * overlap + 3 * Math.min(overlap, 4) + 1) / TILE_ALIGN) * TILE_ALIGN;
  return Math.max(smallest, Math.min(MAX_BUDGET_TILE, side));
}
