/**
 * The pure parts of MusicGen decoding: classifier-free guidance, top-k sampling, and the delay
 * pattern (codebook k runs k steps behind codebook 0). Tested alone.
 */

/** Guided logits: uncond + scale * (cond - uncond), written into `out`. */
export function guide(cond: Float32Array, uncond: Float32Array, scale: number, out: Float32Array): Float32Array {
  for (let i = 0; i < out.length; i += 1) {
    const u = uncond[i] as number;
    out[i] = u + scale * ((cond[i] as number) - u);
  }
  return out;
}

/** Samples an index from the k largest logits (softmax at temperature 1). */
export function sampleTopK(logits: Float32Array, k: number, random: () => number): number {
  const n = logits.length;
  const take = Math.max(1, Math.min(k, n));
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => (logits[b] as number) - (logits[a] as number));
  const top = order.slice(0, take);
  const max = logits[top[0] as number] as number;
  const weights = top.map((i) => Math.exp((logits[i] as number) - max));
  const total = weights.reduce((a, b) => a + b, 0);
  let r = random() * total;
  for (let j = 0; j < take; j += 1) {
    r -= weights[j] as number;
    if (r <= 0) return top[j] as number;
  }
  return top[take - 1] as number;
}

/** Decoder steps for `frames` audio frames: the last codebook finishes `codebooks - 1` steps late. */
export function stepsFor(frames: number, codebooks: number): number {
  return frames + codebooks - 1;
}

/** Whether codebook `k` is still waiting (pad) at sequence position `position` (start token at 0). */
export function isDelayed(position: number, codebook: number): boolean {
  return position <= codebook;
}

/**
 * Undoes the delay: `sequence[b][k]` holds positions 0..steps; codebook k's frames are positions
 * k+1 .. k+frames. Returns audio codes [1, B, K, frames] flattened.
 */
export function undelay(sequence: readonly (readonly Int32Array[])[], frames: number): BigInt64Array {
  const batch = sequence.length;
  const codebooks = sequence[0]?.length ?? 0;
  const out = new BigInt64Array(batch * codebooks * frames);
  for (let b = 0; b < batch; b += 1) {
    for (let k = 0; k < codebooks; k += 1) {
      const row = sequence[b]?.[k] as Int32Array;
      for (let t = 0; t < frames; t += 1) out[(b * codebooks + k) * frames + t] = BigInt(row[k + 1 + t] as number);
    }
  }
  return out;
}
