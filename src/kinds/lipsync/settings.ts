/**
 * Lip-sync's settings, for src/config.ts: which model manifest serves each public lip-sync model id
 * (MEDIA_WORKER_LIPSYNC_MODELS). No runtime imports: reading the settings loads no ONNX Runtime.
 */
import { z } from 'zod';
import { LIPSYNC_MODEL_IDS } from '../../jobs/index.js';
import { parseNameList } from '../../settings-table.js';
import { LIPSYNC_PROFILES, perModel } from './pipeline/profiles.js';

/** The real weights' manifest name that the defaults point at. */
export const REAL_LIPSYNC_MODEL = 'wav2lip';
/** The generated test model: exercises the pipeline, does not lip-sync. */
export const TEST_LIPSYNC_MODEL = 'wav2lip-test';

export const lipsyncManifestName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.-]*$/, 'Expected a model manifest name of lower-case letters, digits, dots and dashes');

export const lipsyncModelMappingSchema = z.object(perModel(() => lipsyncManifestName)).strict();

export type LipsyncModelMapping = z.infer<typeof lipsyncModelMappingSchema>;

export const DEFAULT_LIPSYNC_MODEL_MAPPING: Readonly<LipsyncModelMapping> = Object.freeze(
  perModel(() => REAL_LIPSYNC_MODEL),
);

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

/** MuseTalk's manifest that the `musetalk` backend runs by default: real graphs an operator installs. */
export const REAL_MUSETALK_MODEL = 'musetalk';
/** Frames per UNet call (and per VAE call: twice as many crops) by default; the memory a batch holds grows with it. */
export const DEFAULT_MUSETALK_BATCH = 8;

/**
 * The lip-sync backends an operator can list in MEDIA_WORKER_LIPSYNC_BACKENDS, in order of
 * preference: `musetalk` (MuseTalk 1.5 on this host, MEDIA_WORKER_MUSETALK_MODEL; the ids its
 * profile allows), `wav2lip`, the networks this host runs (MEDIA_WORKER_LIPSYNC_MODELS), and
 * `sync-compatible`, a provider that speaks sync.so's v2 API.
 */
export const LIPSYNC_BACKEND_NAMES = ['wav2lip', 'musetalk', 'sync-compatible'] as const;
export type LipsyncBackendName = (typeof LIPSYNC_BACKEND_NAMES)[number];

/** "wav2lip" or "musetalk,wav2lip,sync-compatible": known names, no repeats, at least one, in order of preference. */
export function parseLipsyncBackends(value: string): LipsyncBackendName[] {
  const out = parseNameList(value, LIPSYNC_BACKEND_NAMES, 'lip-sync backend');
  if (out.length === 0)
    throw new Error(
      `Expected at least one of ${LIPSYNC_BACKEND_NAMES.join(', ')} but received ${JSON.stringify(value)}`,
    );
  return out;
}

/** A provider's model name: sync.so spells them with letters, digits, dots and dashes. */
const providerModel = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'Expected a provider model name of letters, digits, dots, underscores and dashes',
  );

/** Which provider model serves each public id through `sync-compatible`; null: that id is not sent to the provider. */
export const syncModelMapSchema = z.object(perModel(() => providerModel.nullable())).strict();

export type SyncModelMap = z.infer<typeof syncModelMapSchema>;

/** sync.so's own names for what the spec's three models promise (docs/lipsync.md, "Backends"). */
export const DEFAULT_SYNC_MODEL_MAP: Readonly<SyncModelMap> = Object.freeze(
  perModel((id) => LIPSYNC_PROFILES[id].providerModel),
);

/** The map from a JSON object naming some ids (the others keep the default), e.g. `{"vendor-lipsync-3":null}`. */
export function parseSyncModelMap(text: string): SyncModelMap {
  let given: unknown;
  try {
    given = JSON.parse(text.trim());
  } catch {
    throw new Error(
      `Expected a JSON object of lip-sync model ids to provider models but received ${JSON.stringify(text)}`,
    );
  }
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new Error(
      `Expected a JSON object of lip-sync model ids to provider models but received ${JSON.stringify(text)}`,
    );
  }
  const parsed = syncModelMapSchema.safeParse({ ...DEFAULT_SYNC_MODEL_MAP, ...given });
  if (!parsed.success) throw new Error(`Expected a valid provider model map but ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
