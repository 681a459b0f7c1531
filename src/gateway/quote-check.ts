/**
 * The worker's quote checked against what the gateway can know itself. A worker parses customers'
 * files and may be taken over, so its answer is a claim: the measured figures it reports (the
 * image's size, the video's duration) cannot be re-measured here without fetching, but the price
 * of those figures can be recomputed with the one pricing module (src/jobs/pricing.ts), and the
 * echo must be the job that was asked (its URLs, factor, model, sync mode). Anything else is
 * refused before a credit moves (docs/contract.md, "What the gateway checks").
 */
import { z } from 'zod';
import {
  imageQuoteSchema,
  isJobError,
  lipsyncQuoteSchema,
  musicQuoteSchema,
  priceImageUpscale,
  priceLipsync,
  priceMusic,
  priceVideoUpscale,
  videoQuoteSchema,
  type Job,
} from '../jobs/index.js';

/** `input`: the quote's echo as checked, without fields the schema does not know (it is shown to the customer). */
export type QuoteVerdict = { ok: true; input: Record<string, unknown> } | { ok: false; reason: string };

const DIMENSIONS = /^([1-9]\d{0,5})×([1-9]\d{0,5})$/;
const DURATION = /^(\d{1,6}(?:\.\d{1,3})?)s$/;

/** Whether `quote` is the honest price of `job` for the figures the quote itself reports. */
export function checkQuote(job: Job, quote: unknown): QuoteVerdict {
  try {
    return verdict(job, quote);
  } catch (err) {
    // The pricing module refuses the figures (too long, too large): no worker should have priced them.
    if (isJobError(err)) return refuse(`its figures are refused by the price list (${err.code}: ${err.message})`);
    throw err;
  }
}

function verdict(job: Job, quote: unknown): QuoteVerdict {
  switch (job.model) {
    case 'vendor-image-upscale': {
      const q = parse(imageQuoteSchema, quote);
      if (typeof q === 'string') return refuse(q);
      const same = sameEcho([q.input.image_url, job.input.image_url, 'image_url'], [q.input.upscale_factor, job.input.upscale_factor, 'upscale_factor']);
      if (same !== null) return refuse(same);
      const size = DIMENSIONS.exec(q.input.detected_dimensions);
      if (size === null) return refuse(`detected_dimensions ${JSON.stringify(q.input.detected_dimensions)} is not <width>×<height>`);
      const price = priceImageUpscale(Number(size[1]), Number(size[2]), job.input.upscale_factor);
      return samePrice(q.input, [q.creditsUsed, price.creditsUsed, 'creditsUsed'], [q.input.output_tier, price.outputTier, 'output_tier']);
    }
    case 'vendor-video-upscale': {
      const q = parse(videoQuoteSchema, quote);
      if (typeof q === 'string') return refuse(q);
      const same = sameEcho([q.input.video_url, job.input.video_url, 'video_url'], [q.input.upscale_factor, job.input.upscale_factor, 'upscale_factor']);
      if (same !== null) return refuse(same);
      const seconds = DURATION.exec(q.input.detected_duration);
      if (seconds === null) return refuse(`detected_duration ${JSON.stringify(q.input.detected_duration)} is not <seconds>s`);
      const price = priceVideoUpscale(Number(seconds[1]), job.input.upscale_factor);
      return samePrice(
        q.input,
        [q.creditsUsed, price.creditsUsed, 'creditsUsed'],
        [q.input.billed_seconds, price.billedSeconds, 'billed_seconds'],
        [q.input.credits_per_second, price.creditsPerSecond, 'credits_per_second'],
      );
    }
    case 'vendor-v5-generate-music': {
      const q = parse(musicQuoteSchema, quote);
      if (typeof q === 'string') return refuse(q);
      return samePrice(q.input, [q.creditsUsed, priceMusic().creditsUsed, 'creditsUsed']);
    }
    default: {
      const q = parse(lipsyncQuoteSchema, quote);
      if (typeof q === 'string') return refuse(q);
      const same = sameEcho(
        [q.model, job.model, 'model'],
        [q.input.model, job.model, 'input.model'],
        [q.input.video_url, job.input.video_url, 'video_url'],
        [q.input.audio_url, job.input.audio_url, 'audio_url'],
        [q.input.sync_mode, job.input.sync_mode, 'sync_mode'],
        [q.input.active_speaker, job.input.active_speaker, 'active_speaker'],
      );
      if (same !== null) return refuse(same);
      const price = priceLipsync(job.model, q.duration);
      return samePrice(
        q.input,
        [q.creditsUsed, price.creditsUsed, 'creditsUsed'],
        [q.duration, price.durationSeconds, 'duration'],
        [q.input.billed_seconds, price.billedSeconds, 'billed_seconds'],
        [q.input.credits_per_second, price.creditsPerSecond, 'credits_per_second'],
      );
    }
  }
}

type Pair = [given: unknown, expected: unknown, field: string];

function parse<T>(schema: z.ZodType<T>, quote: unknown): T | string {
  const parsed = schema.safeParse(quote);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  return `it is not a quote of this model (${issue?.path.join('.') || 'quote'}: ${issue?.message ?? 'invalid'})`;
}

/** The first field where the quote's echo differs from the job asked, in words; null when none. */
function sameEcho(...pairs: Pair[]): string | null {
  const differs = pairs.find(([given, expected]) => given !== expected);
  if (differs === undefined) return null;
  // URLs may carry secrets in their query (signed upload links): they stay out of the log.
  if (differs[2].endsWith('_url')) return `its ${differs[2]} is not the job's`;
  return `its ${differs[2]} ${JSON.stringify(differs[0])} is not the job's ${JSON.stringify(differs[1])}`;
}

function samePrice(input: object, ...pairs: Pair[]): QuoteVerdict {
  const differs = pairs.find(([given, expected]) => given !== expected);
  if (differs === undefined) return { ok: true, input: { ...input } };
  return refuse(`its ${differs[2]} is ${JSON.stringify(differs[0])} where the price list gives ${JSON.stringify(differs[1])} for its own figures`);
}

function refuse(reason: string): QuoteVerdict {
  return { ok: false, reason };
}
