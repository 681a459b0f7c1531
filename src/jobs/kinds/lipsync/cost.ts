/**
 * Lip-sync's part of the cost model and of the work limits (cost-model.ts, work-limits.ts): the
 * output its sync mode makes, what that costs to process, and output longer than the credits cover.
 */
import { JobError } from '../../../errors.js';
import { MEGA, roundUpTenth, total, type CostEstimate } from '../../cost-model.js';
import type { HardwareProfile } from '../../hardware-classes.js';
import { expectedText } from '../../messages.js';
import type { WorkLimits } from '../../work-limits.js';
import type { SyncMode } from './types.js';

/**
 * Seconds of output each sync mode produces (spec 4.2, the semantics of src/lipsync/timeline.ts,
 * which plans the same in whole frames): the audio's for loop, bounce and remap; the shorter
 * input's for cut_off; the longer input's for silence.
 */
export function lipsyncOutputSeconds(mode: SyncMode, videoSeconds: number, audioSeconds: number): number {
  switch (mode) {
    case 'cut_off':
      return Math.min(videoSeconds, audioSeconds);
    case 'silence':
      return Math.max(videoSeconds, audioSeconds);
    case 'loop':
    case 'bounce':
    case 'remap':
      return audioSeconds;
  }
}

export interface LipsyncCostRequest {
  width: number;
  height: number;
  /** Output frames (the output runs at the source frame rate). */
  frames: number;
}

/**
 * Every output frame is decoded (twice: the face pass and the output pass read the video), run
 * through detection, the lip-sync network and the paste, and encoded at the input's size.
 */
export function estimateLipsync(req: LipsyncCostRequest, hw: HardwareProfile): CostEstimate {
  const pixels = req.width * req.height;
  const decode = ((2 * pixels * req.frames) / MEGA) * hw.decodeSecondsPerMegapixel;
  const encode = ((pixels * req.frames) / MEGA) * hw.encodeSecondsPerMegapixel;
  const faces = req.frames * hw.lipsyncSecondsPerFrame;
  return {
    frames: req.frames,
    inputPixelsPerFrame: pixels,
    outputPixelsPerFrame: pixels,
    networkMacs: 0,
    seconds: roundUpTenth(total(hw, faces, decode + encode)),
    parts: { setup: hw.setupSeconds, network: faces, decode, encode, other: 0 },
  };
}

/**
 * Lip-sync output longer than the credits cover allows: AUDIO_TOO_LONG. `coveredSeconds` is what
 * the credits pay for (credits / rate: the minimum charge covers its seconds too).
 */
export function checkLipsyncOutput(mode: SyncMode, outputSeconds: number, coveredSeconds: number, limits: WorkLimits): void {
  const maxMs = Math.floor(coveredSeconds * limits.lipsyncMaxOutputPercent * 10);
  const outMs = Math.round(outputSeconds * 1000);
  if (outMs > maxMs) {
    throw new JobError(
      'AUDIO_TOO_LONG',
      expectedText(
        `the output for sync_mode "${mode}"`,
        `at most ${maxMs / 1000} seconds (${limits.lipsyncMaxOutputPercent} % of the ${coveredSeconds} s the credits cover)`,
        `${outMs / 1000} seconds (it follows the audio)`,
      ),
    );
  }
}
