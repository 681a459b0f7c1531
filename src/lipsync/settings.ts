/**
 * Lip-sync's settings, for src/config.ts: which model manifest serves each public lip-sync model id
 * (MEDIA_WORKER_LIPSYNC_MODELS). No runtime imports: reading the settings loads no ONNX Runtime.
 */
import { z } from 'zod';
import { LIPSYNC_MODEL_IDS } from '../jobs/index.js';

/** The real weights' manifest name that the defaults point at. */
export const REAL_LIPSYNC_MODEL = 'wav2lip';
/** The generated test model: exercises the pipeline, does not lip-sync. */
export const TEST_LIPSYNC_MODEL = 'wav2lip-test';

const manifestName = z.string().regex(/^[a-z0-9][a-z0-9.-]*$/, 'Expected a model manifest name of lower-case letters, digits, dots and dashes');

export const lipsyncModelMappingSchema = z
  .object({
    'vendor-lipsync-2': manifestName,
    'vendor-lipsync-2-pro': manifestName,
    'vendor-lipsync-3': manifestName,
  })
  .strict();

export type LipsyncModelMapping = z.infer<typeof lipsyncModelMappingSchema>;

export const DEFAULT_LIPSYNC_MODEL_MAPPING: Readonly<LipsyncModelMapping> = Object.freeze({
  'vendor-lipsync-2': REAL_LIPSYNC_MODEL,
  'vendor-lipsync-2-pro': REAL_LIPSYNC_MODEL,
  'vendor-lipsync-3': REAL_LIPSYNC_MODEL,
});

/**
 * The mapping from a setting's text: one manifest name for all three ids (`wav2lip-test`), or a
 * JSON object naming some ids (the others keep the default), e.g.
 * `{"vendor-lipsync-3":"wav2lip-hq"}`. Throws an Error naming `where` on a bad value.
 */
export function parseLipsyncModelMapping(text: string, where = 'the lip-sync model mapping'): LipsyncModelMapping {
  const trimmed = text.trim();
  let candidate: unknown;
  if (trimmed.startsWith('{')) {
    try {
      candidate = { ...DEFAULT_LIPSYNC_MODEL_MAPPING, ...(JSON.parse(trimmed) as object) };
    } catch {
      throw new Error(`Expected a manifest name or a JSON object for ${where} but received ${JSON.stringify(text)}`);
    }
  } else {
    candidate = Object.fromEntries(LIPSYNC_MODEL_IDS.map((id) => [id, trimmed]));
  }
  const parsed = lipsyncModelMappingSchema.safeParse(candidate);
  if (!parsed.success) throw new Error(`Expected a valid ${where} but ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
