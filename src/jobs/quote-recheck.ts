/**
 * The words of the gateway's re-check of a worker's quote (each kind's `recheck`, src/jobs/kinds/).
 * A worker parses customers' files and may be taken over, so its answer is a claim: the measured
 * figures it reports (the image's size, the video's duration) cannot be re-measured without
 * fetching, but their price can be recomputed with the kind's price (kinds/<kind>/price.ts), and
 * the echo must be the job that was asked (its URLs, factor, model, ...). Anything else is refused.
 */
import type { z } from 'zod';
import type { QuoteVerdict } from './kind-contract.js';
import type { DurationPrice } from './pricing.js';

export type Pair = [given: unknown, expected: unknown, field: string];

/** The quote as the kind's schema reads it, or why it is not one. */
export function parseQuote<T>(schema: z.ZodType<T>, quote: unknown): T | string {
  const parsed = schema.safeParse(quote);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  return `it is not a quote of this model (${issue?.path.join('.') || 'quote'}: ${issue?.message ?? 'invalid'})`;
}

/** The first field where the quote's echo differs from the job asked, in words; null when none. */
export function sameEcho(...pairs: Pair[]): string | null {
  const differs = pairs.find(([given, expected]) => given !== expected);
  if (differs === undefined) return null;
  // URLs may carry secrets in their query (signed upload links): they stay out of the log.
  if (differs[2].endsWith('_url')) return `its ${differs[2]} is not the job's`;
  return `its ${differs[2]} ${JSON.stringify(differs[0])} is not the job's ${JSON.stringify(differs[1])}`;
}

export function samePrice(input: object, ...pairs: Pair[]): QuoteVerdict {
  const differs = pairs.find(([given, expected]) => given !== expected);
  if (differs === undefined) return { ok: true, input: { ...input } };
  return refuse(
    `its ${differs[2]} is ${JSON.stringify(differs[0])} where the price list gives ${JSON.stringify(differs[1])} for its own figures`,
  );
}

export function refuse(reason: string): QuoteVerdict {
  return { ok: false, reason };
}

const DURATION = /^(\d{1,6}(?:\.\d{1,3})?)s$/;

/** The echo of a quote priced by a measured duration (`detected_duration`, `"12.4s"`), and its price. */
export interface DurationEcho {
  detected_duration: string;
  billed_seconds: number;
  credits_per_second: number;
}

/** A duration-priced quote: its `detected_duration` priced again must give its credits, billed seconds and rate. */
export function sameDurationPrice(
  input: DurationEcho,
  creditsUsed: number,
  price: (seconds: number) => DurationPrice,
): QuoteVerdict {
  const seconds = DURATION.exec(input.detected_duration);
  if (seconds === null) return refuse(`detected_duration ${JSON.stringify(input.detected_duration)} is not <seconds>s`);
  const expected = price(Number(seconds[1]));
  return samePrice(
    input,
    [creditsUsed, expected.creditsUsed, 'creditsUsed'],
    [input.billed_seconds, expected.billedSeconds, 'billed_seconds'],
    [input.credits_per_second, expected.creditsPerSecond, 'credits_per_second'],
  );
}
