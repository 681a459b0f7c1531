/**
 * The worker's quote checked against what the gateway can know itself. A worker parses customers'
 * files and may be taken over, so its answer is a claim: each kind's descriptor re-checks it (its
 * `recheck`: the echo is the job asked, the price the kind's own (src/jobs/kinds/<kind>/price.ts) for
 * the quote's own figures). Anything else is refused.
 */
export { checkQuote, type QuoteVerdict } from '../../jobs/index.js';
