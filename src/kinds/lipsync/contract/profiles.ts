/**
 * What each public lip-sync model id means on this worker, in one table: the face detector's
 * profile, whether crops are turned upright, the mouth super-resolution pass, the encoder's
 * bitrate, which in-process networks may serve it, and the provider's model that serves it by
 * default. The pipeline, the settings and the backends read it; nothing else branches on an id.
 *
 * A leaf: no runtime imports, so settings.ts (read by src/config.ts) may use it.
 */
import { LIPSYNC_MODEL_IDS, type LipsyncModelId } from './types.js';

/** The lip-sync networks this worker runs in process. */
export const LIPSYNC_NETWORKS = ['wav2lip', 'musetalk'] as const;
export type LipsyncNetworkName = (typeof LIPSYNC_NETWORKS)[number];

export interface LipsyncProfile {
  /** The face detector's settings (faces/faces.ts FACE_DETECTION_PROFILES). */
  faceDetection: 'standard' | 'robust';
  /** Turn each crop upright along the eye line before the network sees it. */
  align: boolean;
  /** Upscale the generated mouth where the face is larger on screen than the network's output. */
  mouthSuperResolution: boolean;
  /** Encode at the source's bitrate (when it declares one) instead of the configured constant quality. */
  keepSourceBitrate: boolean;
  /**
   * In-process networks that may serve it. MuseTalk's crop is not turned upright and its face box
   * needs a face the detector finds without the robust profile's border, so vendor-lipsync-3
   * (alignment, robust detection) stays Wav2Lip's.
   */
  networks: readonly LipsyncNetworkName[];
  /** sync.so's own name for what the id promises (docs/lipsync.md, "Backends"). */
  providerModel: string;
}

export const LIPSYNC_PROFILES: Readonly<Record<LipsyncModelId, Readonly<LipsyncProfile>>> = Object.freeze({
  'vendor-lipsync-2': {
    faceDetection: 'standard',
    align: false,
    mouthSuperResolution: false,
    keepSourceBitrate: false,
    networks: ['wav2lip', 'musetalk'],
    providerModel: 'lipsync-2',
  },
  'vendor-lipsync-2-pro': {
    faceDetection: 'standard',
    align: false,
    mouthSuperResolution: true,
    keepSourceBitrate: true,
    networks: ['wav2lip', 'musetalk'],
    providerModel: 'lipsync-2-pro',
  },
  'vendor-lipsync-3': {
    faceDetection: 'robust',
    align: true,
    mouthSuperResolution: false,
    keepSourceBitrate: false,
    networks: ['wav2lip'],
    providerModel: 'sync-3',
  },
});

export function lipsyncProfile(model: LipsyncModelId): Readonly<LipsyncProfile> {
  return LIPSYNC_PROFILES[model];
}

/** A value per model id, from a function of the id (the settings' per-id tables). */
export function perModel<T>(value: (id: LipsyncModelId) => T): Record<LipsyncModelId, T> {
  return Object.fromEntries(LIPSYNC_MODEL_IDS.map((id) => [id, value(id)])) as Record<LipsyncModelId, T>;
}
