/**
 * Dolby Vision, read from the DOVI configuration record (the MP4 `dvcC`/`dvvC` box, Matroska's block
 * addition mapping where the demuxer reads it) that ffprobe lists in a stream's side data. The record is in the container, so
 * the quote's probe sees it and refuses what no pipeline can process before anything is charged
 * (docs/contract.md, "Video fidelity"); the video pipelines read the same record and run the same check.
 */
import { JobError } from '../errors.js';

export interface DolbyVision {
  profile: number;
  /** dv_bl_signal_compatibility_id: 0 none, 1 HDR10, 2 SDR, 4 HLG, 6 HDR10 (Blu-ray). */
  compatibility: number;
}

/** The record from one side-data entry of ffprobe's JSON; undefined when it is another kind or incomplete. */
export function dolbyVisionFromSideData(side: Readonly<Record<string, unknown>>): DolbyVision | undefined {
  if (side['side_data_type'] !== 'DOVI configuration record') return undefined;
  const profile = Number(side['dv_profile']);
  const compatibility = Number(side['dv_bl_signal_compatibility_id']);
  return Number.isInteger(profile) && Number.isInteger(compatibility) ? { profile, compatibility } : undefined;
}

/**
 * Refuses a Dolby Vision stream whose base layer no player can show without the RPU (profile 5,
 * IPTPQc2): tone-mapping it would guess its colours. Every other profile is its base layer.
 */
export function checkDolbyVision(dv: DolbyVision | undefined): void {
  if (dv === undefined) return;
  if (dv.compatibility === 0) {
    throw new JobError(
      'PROBE_FAILED',
      `Dolby Vision profile ${dv.profile} without an HDR10, SDR or HLG base layer is not supported: export the video as HDR10, HLG or SDR`,
    );
  }
}
