/**
 * What the two upscale kinds' contracts say alike: reading the factor, and the result of an
 * upscaled file (its URL, its type, its size, then what the kind adds) as the wire's zod schema,
 * as the OpenAPI document's schema and as the descriptor's result fields. A kind may not import
 * another, so the part both say is written once here, in the generic contract; it names no kind.
 */
import { z } from 'zod';
import { optionalEnum } from './fields.js';
import type { Fields } from './kind-contract.js';
import { DEFAULT_UPSCALE_FACTOR, UPSCALE_FACTORS, type UpscaleFactor } from './types.js';

/** `upscale_factor`: one of UPSCALE_FACTORS, the default when absent, else INVALID_UPSCALE_FACTOR. */
export function readUpscaleFactor(input: Fields): UpscaleFactor {
  return optionalEnum(input, 'upscale_factor', UPSCALE_FACTORS, DEFAULT_UPSCALE_FACTOR, 'INVALID_UPSCALE_FACTOR');
}

/** The result's zod schema: url, type, width and height, then the kind's own fields. */
export function upscaledResultSchema<const T extends string, E extends z.ZodRawShape>(type: T, extra: E) {
  return z.object({ url: z.string(), type: z.literal(type), width: z.number(), height: z.number() }).extend(extra);
}

/** The result's OpenAPI schema: the same fields in the same order, every one required. */
export function upscaledResultOpenApi(title: string, type: string, extra: Record<string, unknown>) {
  const properties = {
    url: { type: 'string' },
    type: { type: 'string', enum: [type] },
    width: { type: 'integer' },
    height: { type: 'integer' },
    ...extra,
  };
  return { title, type: 'object', properties, required: Object.keys(properties) };
}

/** An upscaled result links its one file, which lives RESULTS_UPSCALE_LIFETIME_DAYS. */
export const upscaledResultLinks = {
  resultUrls: (result: { url: string }): string[] => [result.url],
  resultLifetimeDays: 'upscale-setting',
} as const;
