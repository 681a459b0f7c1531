/**
 * Warm before ready: before the daemon reports ready and pulls, it opens every network the kinds it
 * serves run (each kind's runtime says which: its `warm`, src/app/kinds/) through the same loaders
 * and caches the pipelines use, and runs each super-resolution network once. The first job then pays no start-up: no graph to load and
 * optimise, no thread pool to start, and on a GPU no CUDA context, cuDNN plan or TensorRT engine
 * for the tile shape of a large input (the budget tile: the shape every tile of a large image and
 * every frame of a large video has).
 *
 * A network that cannot be opened here is not fatal: the readiness checks keep its kind from being
 * pulled and say why, and a job opens it again.
 */
import type { Config } from '../config.js';
import { isGpuProvider, SR_FACTORS, type LoadedSrModel, type SrUse } from '../inference/index.js';
import { JOB_KINDS, type JobKind } from '../jobs/index.js';
import type { Logger } from '../logger.js';
import { errorMessage } from '../errors.js';
import type { Engine } from './kind-runtime.js';

/** The side of the warm-up run on the CPU: enough to start every kernel and thread, cheap on any network. */
export const CPU_WARM_SIDE = 16;

export interface WarmStep {
  /** What was opened: `sr image x2`, `face detector blazeface-front-128`, ... */
  what: string;
  ms: number;
  /** Why it could not be opened; absent when it was. */
  error?: string;
}

/** The networks each served kind runs, as steps that open (and run) them. */
export function warmPlan<S>(
  served: readonly JobKind[],
  engine: Engine<S>,
  gpu: boolean,
): { what: string; run: () => Promise<unknown> }[] {
  const steps: { what: string; run: () => Promise<unknown> }[] = [];
  const seen = new Set<string>();
  const sr = (use: SrUse, factor: (typeof SR_FACTORS)[number]): void => {
    steps.push({
      what: `sr ${use} x${factor}`,
      run: async () => {
        const loaded = await engine.loadSrModel(use, factor);
        // One run per network and shape, whatever uses and factors share it.
        const dims = warmDims(loaded, gpu);
        const key = `${loaded.name}:${dims.join('x')}`;
        if (seen.has(key)) return;
        seen.add(key);
        await loaded.model.run(new Float32Array(dims.reduce((a, b) => a * b, 1)), dims);
      },
    });
  };
  // In the registry's order, whatever order `served` names them in.
  const context = { engine, sr, step: (what: string, run: () => Promise<unknown>) => steps.push({ what, run }) };
  for (const kind of JOB_KINDS) if (served.includes(kind)) engine.runtimes.byKind[kind].warm(context);
  return steps;
}

/** [batch, 3, side, side]: the budget tile on a GPU (the shape large inputs run at), a small one on the CPU. */
export function warmDims(loaded: Pick<LoadedSrModel, 'tiling'>, gpu: boolean): [number, number, number, number] {
  const side = gpu && loaded.tiling.tile !== undefined ? loaded.tiling.tile : CPU_WARM_SIDE;
  const batch = gpu ? Math.max(1, loaded.tiling.batch ?? 1) : 1;
  return [batch, 3, side, side];
}

/** Opens and runs what the served kinds use; every step reported, none fatal. */
export async function warmNetworks<S>(
  config: Config,
  engine: Engine<S>,
  served: readonly JobKind[],
  logger: Logger,
): Promise<WarmStep[]> {
  const gpu = isGpuProvider(config.executionProviders[0] ?? 'cpu');
  const started = performance.now();
  const report: WarmStep[] = [];
  for (const step of warmPlan(served, engine, gpu)) {
    const t0 = performance.now();
    try {
      await step.run();
      report.push({ what: step.what, ms: Math.round(performance.now() - t0) });
    } catch (err) {
      report.push({
        what: step.what,
        ms: Math.round(performance.now() - t0),
        error: errorMessage(err).split('\n', 1)[0] ?? '',
      });
    }
  }
  const failed = report.filter((s) => s.error !== undefined);
  const fields = { ms: Math.round(performance.now() - started), steps: report };
  // "inference ready" opens both lines: operators and tests look for it (docs/operations.md, "Signals").
  if (failed.length > 0)
    logger.warn(
      fields,
      `inference ready, but ${failed.length} of ${report.length} networks could not be opened (their kinds wait for their readiness checks): ${failed.map((s) => s.what).join(', ')}`,
    );
  else logger.info(fields, `inference ready: ${report.length} networks opened and run (warm start)`);
  return report;
}
