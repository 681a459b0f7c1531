/**
 * Lip-sync's settings, for src/config.ts: which model manifest serves each public lip-sync model id
 * (MEDIA_WORKER_LIPSYNC_MODELS), the backends in order of preference, the sync.so-compatible
 * provider, and the longest output a job may ask for. No runtime imports: reading the settings loads
 * no ONNX Runtime.
 */
import { z } from 'zod';
import { DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT } from './contract/cost.js';
import { LIPSYNC_MODEL_IDS, type LipsyncModelId } from './contract/types.js';
import {
  httpUrl,
  nonEmptyText,
  parseNameList,
  parsedBy,
  positiveInt,
  setting,
  type SettingsCheck,
} from '../../settings-table.js';
import { LIPSYNC_PROFILES, perModel, type LipsyncNetworkName } from './contract/profiles.js';

/** The real weights' manifest name that the defaults point at. */
export const REAL_LIPSYNC_MODEL = 'wav2lip';
/** The generated test model: exercises the pipeline, does not lip-sync. */
export const TEST_LIPSYNC_MODEL = 'wav2lip-test';

export const lipsyncManifestName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9.-]*$/, 'Expected a model manifest name of lower-case letters, digits, dots and dashes');

/**
 * Which network a manifest name is for: a name that starts with `musetalk` is a MuseTalk 1.5 export
 * (models/musetalk/NAME.json, scripts/install-musetalk-model.ts keeps its names so), any other a
 * network with Wav2Lip's contract (models/NAME.json). A rule on the name, so that the settings
 * alone say which backend serves each id, without reading a file.
 */
export function lipsyncNetworkOf(manifest: string): LipsyncNetworkName {
  return manifest.startsWith('musetalk') ? 'musetalk' : 'wav2lip';
}

/** Each id's manifest runs on a network its profile allows (vendor-lipsync-3 is Wav2Lip's). */
export const lipsyncModelMappingSchema = z
  .object(perModel(() => lipsyncManifestName))
  .strict()
  .superRefine((mapping, ctx) => {
    for (const id of LIPSYNC_MODEL_IDS) {
      const network = lipsyncNetworkOf(mapping[id]);
      const allowed = LIPSYNC_PROFILES[id].networks;
      if (!allowed.includes(network))
        ctx.addIssue({
          code: 'custom',
          path: [id],
          message: `${id} cannot run on ${network} (${mapping[id]}): its profile allows ${allowed.join(', ')}`,
        });
    }
  });

export type LipsyncModelMapping = z.infer<typeof lipsyncModelMappingSchema>;

export const DEFAULT_LIPSYNC_MODEL_MAPPING: Readonly<LipsyncModelMapping> = Object.freeze(
  perModel(() => REAL_LIPSYNC_MODEL),
);

/**
 * The mapping from a setting's text: one manifest name for every id its network may serve (the
 * others keep the default: `musetalk` serves vendor-lipsync-2 and -2-pro, vendor-lipsync-3 stays on
 * `wav2lip`), or a JSON object naming some ids (the others keep the default), e.g.
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
    const network = lipsyncNetworkOf(trimmed);
    candidate = perModel((id) =>
      LIPSYNC_PROFILES[id].networks.includes(network) ? trimmed : DEFAULT_LIPSYNC_MODEL_MAPPING[id],
    );
  }
  const parsed = lipsyncModelMappingSchema.safeParse(candidate);
  if (!parsed.success) throw new Error(`Expected a valid ${where} but ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** The ids that `network` serves under the mapping, in the contract's order. */
export function modelsOnNetwork(mapping: LipsyncModelMapping, network: LipsyncNetworkName): LipsyncModelId[] {
  return LIPSYNC_MODEL_IDS.filter((id) => lipsyncNetworkOf(mapping[id]) === network);
}

/** The manifests that `network` runs under the mapping, each once. */
export function manifestsOnNetwork(mapping: LipsyncModelMapping, network: LipsyncNetworkName): string[] {
  return [...new Set(modelsOnNetwork(mapping, network).map((id) => mapping[id]))];
}

/** MuseTalk's manifest name for the real graphs an operator installs (scripts/install-musetalk-model.ts). */
export const REAL_MUSETALK_MODEL = 'musetalk';
/** Frames per UNet call (and per VAE call: twice as many crops) by default; the memory a batch holds grows with it. */
export const DEFAULT_MUSETALK_BATCH = 8;

/**
 * The lip-sync backends an operator can list in MEDIA_WORKER_LIPSYNC_BACKENDS, in order of
 * preference: `musetalk` and `wav2lip`, the networks this host runs for the ids that
 * MEDIA_WORKER_LIPSYNC_MODELS maps to a manifest of theirs, and `sync-compatible`, a provider that
 * speaks sync.so's v2 API.
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

export const LIPSYNC_SETTINGS = {
  lipsyncModels: setting({
    env: 'MEDIA_WORKER_LIPSYNC_MODELS',
    // One parser for the mapping (above); its error is the setting's, as for the lists below.
    schema: parsedBy(parseLipsyncModelMapping),
    default: 'wav2lip',
    doc: 'Which lip-sync manifest serves each model id, and so which network: a name starting with `musetalk` is MuseTalk 1.5 (models/musetalk/NAME.json: `musetalk`, installed with scripts/install-musetalk-model.ts; `musetalk-test`, generated), any other Wav2Lip\'s contract (`wav2lip`, the real weights installed with scripts/install-lipsync-model.ts; `wav2lip-test`, generated). One name serves every id its network may (MuseTalk: vendor-lipsync-2 and -2-pro, the other keeps `wav2lip`), or JSON such as `{"vendor-lipsync-2":"musetalk","vendor-lipsync-3":"wav2lip-hq"}`.',
  }),
  lipsyncBackends: setting({
    env: 'MEDIA_WORKER_LIPSYNC_BACKENDS',
    schema: parsedBy(parseLipsyncBackends),
    default: 'wav2lip',
    doc: 'Lip-sync backends in order of preference: musetalk and wav2lip (this host runs the ids MEDIA_WORKER_LIPSYNC_MODELS maps to a manifest of that network; list musetalk exactly when it maps some), sync-compatible (a provider speaking sync.so\'s v2 API; docs/lipsync.md, "Backends"). A job goes to the first that can serve its model and is ready.',
  }),
  museTalkBatch: setting({
    env: 'MEDIA_WORKER_MUSETALK_BATCH',
    schema: positiveInt,
    default: String(DEFAULT_MUSETALK_BATCH),
    doc: 'Frames per MuseTalk UNet call; memory grows with it.',
  }),
  syncBaseUrl: setting({
    env: 'MEDIA_WORKER_SYNC_BASE_URL',
    schema: httpUrl,
    default: 'https://api.sync.so',
    doc: 'Base URL of the sync.so-compatible provider (`sync-compatible` lip-sync backend); it must serve POST /v2/generate and GET /v2/generate/{id}.',
  }),
  syncApiKey: setting({
    env: 'MEDIA_WORKER_SYNC_API_KEY',
    schema: nonEmptyText,
    secret: true,
    doc: 'API key of the sync.so-compatible provider, sent as `x-api-key`; checked once when `serve` starts (a refused key: lip-sync through the provider is not pulled, /readyz says why).',
  }),
  syncModels: setting({
    env: 'MEDIA_WORKER_SYNC_MODELS',
    schema: parsedBy(parseSyncModelMap),
    default: JSON.stringify(DEFAULT_SYNC_MODEL_MAP),
    doc: 'Which provider model serves each lip-sync model id through `sync-compatible`: a JSON object naming some ids (the others keep the default); null: that id is not sent to the provider.',
  }),
  syncPollIntervalMs: setting({
    env: 'MEDIA_WORKER_SYNC_POLL_INTERVAL_MS',
    schema: positiveInt,
    default: '5000',
    doc: 'Interval between two status queries of a provider lip-sync generation (a longer Retry-After from the provider wins).',
  }),
  lipsyncMaxOutputPercent: setting({
    env: 'MEDIA_WORKER_LIPSYNC_MAX_OUTPUT_PERCENT',
    schema: positiveInt,
    default: String(DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT),
    doc: 'Longest lip-sync output (it follows the audio in loop, bounce, remap and silence) as a share of the seconds the credits cover, per cent; over it: AUDIO_TOO_LONG.',
  }),
} as const;

/**
 * The backends list and the mapping agree on MuseTalk: `musetalk` is listed exactly when some id is
 * mapped to a MuseTalk manifest, so neither setting is quietly ignored (a host that listed
 * `musetalk` alone, as before MuseTalk was chosen per id, is told what to set).
 */
export const checkLipsyncSettings: SettingsCheck<typeof LIPSYNC_SETTINGS> = ({ lipsyncModels, lipsyncBackends }) => {
  const onMuseTalk = modelsOnNetwork(lipsyncModels, 'musetalk');
  const listed = lipsyncBackends.includes('musetalk');
  if (listed && onMuseTalk.length === 0)
    return [
      {
        key: 'lipsyncBackends',
        message: `musetalk is listed but MEDIA_WORKER_LIPSYNC_MODELS maps no model id to a MuseTalk manifest; set MEDIA_WORKER_LIPSYNC_MODELS=${REAL_MUSETALK_MODEL} (or musetalk-test), or leave musetalk out`,
      },
    ];
  if (!listed && onMuseTalk.length > 0)
    return [
      {
        key: 'lipsyncModels',
        message: `${onMuseTalk.join(' and ')} ${onMuseTalk.length === 1 ? 'is' : 'are'} mapped to MuseTalk (${manifestsOnNetwork(lipsyncModels, 'musetalk').join(', ')}) but MEDIA_WORKER_LIPSYNC_BACKENDS (${lipsyncBackends.join(',')}) does not list musetalk; add it, e.g. MEDIA_WORKER_LIPSYNC_BACKENDS=${['musetalk', ...lipsyncBackends].join(',')}`,
      },
    ];
  return [];
};

/** Variables lip-sync no longer reads, with what to set instead. */
export const LIPSYNC_RETIRED_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  MEDIA_WORKER_MUSETALK_MODEL:
    'MuseTalk is chosen per model id: name its manifest in MEDIA_WORKER_LIPSYNC_MODELS (e.g. MEDIA_WORKER_LIPSYNC_MODELS=musetalk) and list musetalk in MEDIA_WORKER_LIPSYNC_BACKENDS',
});
