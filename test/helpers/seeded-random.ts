/** mulberry32: a small seeded generator, so generated test data is the same on every run (the one the music sampler uses). */
export { seededRandom as random } from '../../src/seeded-random.js';
