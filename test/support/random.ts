/** Seeded random numbers for tests and benchmarks: the same choices for the same seed. */

/** mulberry32: a small, fast PRNG, good enough to generate data and pick moments. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * For tests that pick random moments (crash tests), so a failure can be replayed: the seed is
 * printed, and `LAKELOGIC_TEST_SEED=<seed>` runs the same choices again.
 */
export function seededRandom(label: string): () => number {
  const given = process.env.LAKELOGIC_TEST_SEED;
  const seed = given !== undefined && given !== "" ? Number(given) >>> 0 : (Date.now() ^ process.pid) >>> 0;
  process.stderr.write(`[seed] ${label}: LAKELOGIC_TEST_SEED=${seed}\n`);
  return mulberry32(seed);
}
