/**
 * What `upscale-image` and `upscale-video` say before they start: the estimated processing time on
 * this machine (its hardware class and cores, the network that will run), and the other use's
 * network when that one would take at most half as long. A person at a terminal then waits, or
 * stops and asks for the faster one; the service's limit (JOB_TOO_COSTLY) is not theirs.
 */
import type { Config } from '../config.js';
import { chooseSrModel } from '../inference/index.js';
import { hardwareClassOf, quoteOnly, srModelForJob, workerCores } from '../app/index.js';
import { kindOfModel, type Job, type UpscaleFactor } from '../jobs/index.js';
import { NO_TIME_LIMITS } from './local-run.js';
import { formatSeconds } from './progress.js';
import { definedFields } from '../defined-fields.js';

export interface NetworkEstimate {
  model: string;
  seconds: number;
}

export interface EstimateFigures extends NetworkEstimate {
  hardwareClass: string;
  cores: number;
  /** Another network at most half as long, when the caller did not name one. */
  faster?: NetworkEstimate;
}

/** Worth naming: the other network takes at most this share of the time. */
export const MUCH_SHORTER = 0.5;

export function estimateLine(f: EstimateFigures): string {
  const head = `estimate on this machine (${f.hardwareClass}, ${f.cores} ${f.cores === 1 ? 'core' : 'cores'}): ${formatSeconds(f.seconds)} with ${f.model}`;
  if (f.faster === undefined) return head;
  return `${head}; ${f.faster.model} would take ${formatSeconds(f.faster.seconds)} (--model ${f.faster.model})`;
}

/** The estimate for `job` as it will run, and the faster network's when it is much shorter. */
export async function estimateUpscale(job: Job, factor: UpscaleFactor, config: Config, modelName?: string): Promise<EstimateFigures> {
  const kind = kindOfModel(job.model);
  if (kind !== 'image' && kind !== 'video') throw new RangeError(`Expected an image or video upscale job but received ${job.model}`);
  const quoteWith = async (model: string | undefined): Promise<number> => {
    const quote = await quoteOnly(job, config, {
      taskId: 'estimate',
      allowLocalPaths: true,
      timeLimitsMs: NO_TIME_LIMITS,
      ...definedFields({ modelName: model }),
    });
    const seconds = 'estimated_seconds' in quote ? quote.estimated_seconds : undefined;
    if (seconds === undefined) throw new Error(`Expected the quote of ${job.model} to carry an estimate`);
    return seconds;
  };
  const model = srModelForJob(config.srModels, kind, factor, modelName);
  const seconds = await quoteWith(modelName);
  const figures: EstimateFigures = { model, seconds, hardwareClass: hardwareClassOf(config), cores: workerCores(config) };
  const other = chooseSrModel(config.srModels, kind === 'image' ? 'video' : 'image', factor);
  if (modelName === undefined && other !== model) {
    const otherSeconds = await quoteWith(other);
    if (otherSeconds <= seconds * MUCH_SHORTER) figures.faster = { model: other, seconds: otherSeconds };
  }
  return figures;
}
