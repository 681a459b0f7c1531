/**
 * What each kind needs to run on this host, as readiness checks for the daemon (worker/availability.ts):
 * every kind needs writable results and temp directories and room on disk for a job (its runtime's
 * `diskNeed`), and its own checks (its runtime's `readiness`, src/app/kinds/: networks present and
 * loadable, ffmpeg, a backend answering). A kind failing a check is not pulled until it passes
 * again (checked every WORKER_READINESS_INTERVAL_MS). The runtimes are the engine's (KindRuntimes,
 * handed to it by whoever created it).
 */
import type { Config } from '../config.js';
import { JOB_KINDS, type JobKind } from '../jobs/index.js';
import { type KindChecks, diskSpaceCheck, type DiskNeed } from '../worker/index.js';
import { definedFields } from '../defined-fields.js';
import type { KindRuntimes, ReadinessContext } from './kind-runtime.js';
import { writableDirCheck } from './readiness-checks.js';

export { writableDirCheck } from './readiness-checks.js';
export type { ReadinessContext } from './kind-runtime.js';

/** What one job of each kind can need on disk (docs/operations.md, "Disk space"). */
export function diskNeed(runtimes: KindRuntimes, kind: JobKind, config: Config): DiskNeed {
  return runtimes.byKind[kind].diskNeed(config);
}

/** Every kind's checks for `serve`: its own, plus writable directories and disk space. */
export function readinessChecks<S>(ctx: ReadinessContext<S>): KindChecks {
  const { runtimes } = ctx.engine;
  const shared = [
    writableDirCheck('results-dir', ctx.settings.resultsDir),
    writableDirCheck('temp-dir', ctx.config.tmpDir),
  ];
  if (ctx.config.modelFilesDir !== undefined)
    shared.push(writableDirCheck('model-files-dir', ctx.config.modelFilesDir));
  if (ctx.resultStore !== undefined) shared.push(ctx.resultStore);
  const out: KindChecks = {};
  for (const kind of JOB_KINDS) {
    const disk = diskSpaceCheck({
      tempDir: ctx.config.tmpDir,
      resultsDir: ctx.settings.resultsDir,
      need: diskNeed(runtimes, kind, ctx.config),
      reserveBytes: ctx.settings.diskReserveMb * 1024 * 1024,
      ...definedFields({ freeBytes: ctx.freeBytes }),
    });
    out[kind] = [...shared, disk, ...runtimes.byKind[kind].readiness(ctx)];
  }
  return out;
}
