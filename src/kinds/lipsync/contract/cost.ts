/**
 * Lip-sync's part of the cost model and of the work limits (cost-model.ts, work-limits.ts): the
 * output its sync mode makes, what that costs to process on each hardware class, and output longer
 * than the credits cover. Its figures and its limit are its own part of the quote policy
 * (`LipsyncPolicy`), which its runtime half builds from the settings (src/kinds/lipsync/runtime.ts).
 */
import { JobError } from '../../../errors.js';
import { MEGA, roundUpTenth, total, type CostEstimate } from '../../../jobs/cost-model.js';
import type { HardwareClassName, HardwareProfile } from '../../../jobs/hardware-classes.js';
import { expectedText } from '../../../jobs/messages.js';
import type { LipsyncPolicy, SyncMode } from './types.js';

/**
 * The output may run up to twice the seconds the credits cover (a short looped clip under a longer
 * voice-over is the use of `loop`), never unbounded (MEDIA_WORKER_LIPSYNC_MAX_OUTPUT_PERCENT).
 */
export const DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT = 200;

/**
 * Seconds per output frame on each hardware class (hardware-classes.ts), besides decode and encode:
 * face detection, crop, the lip-sync network on one face, paste; on the whole machine (the
 * network's share on GPU classes). `measuredOnCores`: the figure scales with the worker's cores
 * from the count it was measured on, like the network on a CPU class.
 *
 * CPU: 70 ms per frame on 2 cores: BlazeFace 7.4 ms and crop plus paste 2.6 ms (measured,
 * docs/benchmarks.md "Lip-sync") and 60 ms for the network on one face, the lip-sync benchmark's
 * stand-in for a real Wav2Lip on a CPU (an ASSUMPTION: no real weights on these machines). H100:
 * 6 ms per frame, detection and paste on the host's cores with the network on the GPU (an ESTIMATE).
 */
export const LIPSYNC_FRAME_SECONDS: Readonly<Record<HardwareClassName, { seconds: number; measuredOnCores?: number }>> =
  {
    cpu: { seconds: 0.07, measuredOnCores: 2 },
    h100: { seconds: 0.006 },
  };

/** Seconds per output frame on the worker's hardware class and cores. */
export function lipsyncSecondsPerFrame(hw: Pick<HardwareProfile, 'name' | 'cores'>): number {
  const { seconds, measuredOnCores } = LIPSYNC_FRAME_SECONDS[hw.name];
  return measuredOnCores === undefined ? seconds : (seconds * measuredOnCores) / hw.cores;
}

/**
 * Seconds of output each sync mode produces (spec 4.2, the semantics of src/kinds/lipsync/pipeline/timeline.ts,
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
export function estimateLipsync(req: LipsyncCostRequest, hw: HardwareProfile, secondsPerFrame: number): CostEstimate {
  const pixels = req.width * req.height;
  const decode = ((2 * pixels * req.frames) / MEGA) * hw.decodeSecondsPerMegapixel;
  const encode = ((pixels * req.frames) / MEGA) * hw.encodeSecondsPerMegapixel;
  const faces = req.frames * secondsPerFrame;
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
export function checkLipsyncOutput(
  mode: SyncMode,
  outputSeconds: number,
  coveredSeconds: number,
  limits: Pick<LipsyncPolicy, 'maxOutputPercent'>,
): void {
  const maxMs = Math.floor(coveredSeconds * limits.maxOutputPercent * 10);
  const outMs = Math.round(outputSeconds * 1000);
  if (outMs > maxMs) {
    throw new JobError(
      'AUDIO_TOO_LONG',
      expectedText(
        `the output for sync_mode "${mode}"`,
        `at most ${maxMs / 1000} seconds (${limits.maxOutputPercent} % of the ${coveredSeconds} s the credits cover)`,
        `${outMs / 1000} seconds (it follows the audio)`,
      ),
    );
  }
}
