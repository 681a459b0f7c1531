/** Adopting an operator's own super-resolution network into the registry (`media-worker models add`). */
export { adoptNetwork, unfilledFields, type AdoptOptions, type AdoptReport } from './adopt.js';
export { AdoptError, type GraphFacts } from './graph-facts.js';
export { CANDIDATE_RANGES, type Range } from './probes.js';
