/**
 * How the device check's parts travel (pure: tested in test/device/plan.test.ts). The `run` tool
 * carries at most 64 MiB per call, the working tree included, and keeps ignored outputs on a warm
 * machine between calls; so the parts are filled largest first up to the per-call budget, every
 * call but the last only unpacks its part, and the last runs the check.
 */

export const MIB = 1024 * 1024;
/** What one `run` call may carry, the working tree included (device tool's limits). */
export const CALL_LIMIT_BYTES = 64 * MIB;
/** The ceiling for one part. */
export const PART_CEILING_BYTES = 60 * MIB;
/** Room left for files that land in the tree after the pack was built. */
export const TREE_MARGIN_BYTES = 1 * MIB;

export interface PackItem {
  name: string;
  file: string;
  bytes: number;
  sha256: string;
}

export interface Part {
  name: string;
  items: PackItem[];
  bytes: number;
}

/** Bytes one part may hold when the working tree that travels with it has `treeBytes`. */
export function partBudget(treeBytes: number): number {
  return Math.min(PART_CEILING_BYTES, CALL_LIMIT_BYTES - treeBytes - TREE_MARGIN_BYTES);
}

/** First-fit decreasing into parts of at most `budget` bytes; an item larger than the budget is an error. */
export function packParts(items: readonly PackItem[], budget: number): Part[] {
  const parts: Part[] = [];
  for (const item of [...items].sort((a, b) => b.bytes - a.bytes || a.name.localeCompare(b.name))) {
    if (item.bytes > budget) {
      throw new RangeError(
        `Expected every item to fit one part of ${(budget / MIB).toFixed(1)} MiB but ${item.name} is ${(item.bytes / MIB).toFixed(1)} MiB`,
      );
    }
    const part = parts.find((p) => p.bytes + item.bytes <= budget);
    if (part === undefined) parts.push({ name: `p${parts.length + 1}`, items: [item], bytes: item.bytes });
    else {
      part.items.push(item);
      part.bytes += item.bytes;
    }
  }
  return parts;
}

export interface RunCall {
  command: string;
  carry: string[];
  timeout_s: number;
}

/**
 * The `run` calls, in order. A call that only brings a part unpacks it (seconds); the last one
 * runs the check with the whole budget. Between calls the machine must stay warm (30 s idle).
 */
export function runCalls(parts: readonly Pick<Part, 'name'>[], folder: string, checkTimeoutS: number): RunCall[] {
  return parts.map((part, i) => {
    const last = i === parts.length - 1;
    const args = last ? '' : ' --unpack-only';
    return {
      command: `PYTHONUNBUFFERED=1 python3 scripts/device/check.py --parts ${folder}${args} 2>&1 | tee $OUT/check.log`,
      carry: [`${folder}/${part.name}`],
      timeout_s: last ? checkTimeoutS : 120,
    };
  });
}
