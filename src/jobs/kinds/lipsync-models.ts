/**
 * Lip-sync models in the spec's order. vendor-lipsync-3 appears only in the spec's pricing table;
 * this worker accepts it everywhere (docs/contract.md). A file of its own without imports: the
 * job's type and the price list read it as well as the kind's descriptor.
 */
export const LIPSYNC_MODEL_IDS = ['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3'] as const;

export type LipsyncModelId = (typeof LIPSYNC_MODEL_IDS)[number];

export const DEFAULT_LIPSYNC_MODEL: LipsyncModelId = 'vendor-lipsync-2';

export function isLipsyncModelId(value: unknown): value is LipsyncModelId {
  return typeof value === 'string' && (LIPSYNC_MODEL_IDS as readonly string[]).includes(value);
}
