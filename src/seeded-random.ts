/**
 * A seeded random stream (mulberry32: small, fast, good enough for sampling): the same seed gives
 * the same sequence. A leaf any layer may import: a generator's sampler, the fault-injection script and
 * the tests draw from it.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
