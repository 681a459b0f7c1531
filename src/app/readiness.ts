/**
 * What each kind needs to run on this host, as readiness checks for the daemon (worker/availability.ts):
 * every kind needs writable results and temp directories and room on disk for a job; image and video
 * need the default super-resolution networks (present, or convertible into the model files
 * directory); video and lip-sync need ffmpeg; lip-sync needs the network each model id maps to
 * (manifest, weights, loadable with Wav2Lip's contract) and the face detector. A kind failing a check
 * is not pulled until it passes again (checked every WORKER_READINESS_INTERVAL_MS), so installing
 * lip-sync weights on a running host makes it serve lip-sync without a restart.
 *
 * Music: a configured backend that says it is ready (weights installed, server answering), asked
 * again at every check since a server can go away.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Engine } from './run-job.js';
import { ensureModelFile, chooseSrModel, type SrUse } from '../inference/index.js';
import { IMAGE_MAX_OUTPUT_MEGAPIXELS, LIPSYNC_MODEL_IDS, VIDEO_UPSCALE_MAX_SECONDS, type JobKind } from '../jobs/index.js';
import { loadBlazeFace, FACE_DETECTION_PROFILES, DEFAULT_MAX_OUTPUT_SECONDS, loadLipsyncModel } from '../lipsync/index.js';
import { JOB_DIR_PREFIX, ownerToken, resolveFfmpeg } from '../media/index.js';
import { registryOptions } from './layer-options.js';
import { musicReadiness } from '../music/index.js';
import { type KindChecks, type ReadinessCheck, diskSpaceCheck, type DiskNeed } from '../worker/index.js';
import type { WorkerSettings } from '../worker/settings.js';
import { errorMessage } from '../errors.js';
import { definedFields } from '../defined-fields.js';

export interface ReadinessContext {
  config: Config;
  settings: Pick<WorkerSettings, 'resultsDir' | 'diskReserveMb'>;
  engine: Engine;
  logger: Logger;
  /** Free bytes in a directory's file system (tests fake a full disk). */
  freeBytes?: (dir: string) => Promise<number>;
}

/** A kind's own checks (the shared directory and disk checks are added by `readinessChecks`). */
export type KindReadiness = (ctx: ReadinessContext) => ReadinessCheck[];

const musicKindReadiness: KindReadiness = (ctx) => [
  {
    name: 'music-backend',
    run: async () => {
      const music = await musicReadiness(ctx.engine.music);
      return music.ready ? null : (music.reason ?? 'no music backend is ready');
    },
  },
];

/** Bytes per second of an encoded video result, a generous bound (4K H.264 at CRF 18 stays below). */
const VIDEO_OUTPUT_BYTES_PER_SECOND = 60_000_000 / 8;

/** What one job of each kind can need on disk (docs/operations.md, "Disk space"). */
export function diskNeed(kind: JobKind, config: Config): DiskNeed {
  switch (kind) {
    case 'image': {
      const output = IMAGE_MAX_OUTPUT_MEGAPIXELS * 1_000_000 * 4;
      return { temp: config.maxImageBytes + output, results: output };
    }
    case 'video': {
      const output = VIDEO_UPSCALE_MAX_SECONDS * VIDEO_OUTPUT_BYTES_PER_SECOND;
      return { temp: config.maxVideoBytes + output, results: output };
    }
    case 'lipsync': {
      const output = DEFAULT_MAX_OUTPUT_SECONDS * VIDEO_OUTPUT_BYTES_PER_SECOND;
      return { temp: config.maxVideoBytes + config.maxAudioBytes + output, results: output };
    }
    case 'music': {
      const output = 64 * 1024 * 1024;
      return { temp: output, results: output };
    }
  }
}

/** The directory can be created and written (a probe file, removed at once). */
export function writableDirCheck(name: string, dir: string): ReadinessCheck {
  return {
    name,
    async run() {
      const probe = path.join(dir, `${JOB_DIR_PREFIX}${ownerToken()}-write-probe-${randomBytes(4).toString('hex')}`);
      try {
        await mkdir(dir, { recursive: true });
        await writeFile(probe, '');
        return null;
      } catch (err) {
        return `${dir} is not writable by this process (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
      } finally {
        await rm(probe, { force: true });
      }
    },
  };
}

/** Passes once `attempt` resolved; a failure is reported (its first line) and tried again next round. */
function check(name: string, attempt: () => Promise<unknown>): ReadinessCheck {
  let passed = false;
  return {
    name,
    async run() {
      if (passed) return null;
      try {
        await attempt();
        passed = true;
        return null;
      } catch (err) {
        const message = errorMessage(err);
        return message.split('\n', 1)[0] ?? message;
      }
    },
  };
}

/** The networks a kind's jobs run by default (MEDIA_WORKER_SR_MODELS), present or convertible. */
function srReadiness(ctx: ReadinessContext, use: Extract<SrUse, 'image' | 'video'>): ReadinessCheck {
  const registry = { ...registryOptions(ctx.config), logger: ctx.logger };
  const names = new Set((['1', '2', '4'] as const).map((factor) => chooseSrModel(ctx.config.srModels, use, factor)));
  return check('sr-models', async () => {
    for (const name of names) await ensureModelFile(name, registry);
  });
}

function ffmpegReadiness(ctx: ReadinessContext): ReadinessCheck {
  return check('ffmpeg', async () => resolveFfmpeg(definedFields({ ffmpegPath: ctx.config.ffmpegPath })));
}

const lipsyncReadiness: KindReadiness = (ctx) => {
  const registry = registryOptions(ctx.config);
  const sessions = ctx.engine.inlineSessions;
  return [
    check('lipsync-model', async () => {
      for (const id of LIPSYNC_MODEL_IDS) await loadLipsyncModel(id, { sessions, mapping: ctx.config.lipsyncModels, registry });
    }),
    check('face-detector', async () => {
      for (const model of new Set(Object.values(FACE_DETECTION_PROFILES).map((p) => p.model))) await loadBlazeFace(model, { sessions, registry });
    }),
  ];
};

/** Each kind's own checks. */
export const KIND_READINESS: Readonly<Record<JobKind, KindReadiness>> = {
  image: (ctx) => [srReadiness(ctx, 'image')],
  video: (ctx) => [srReadiness(ctx, 'video'), ffmpegReadiness(ctx)],
  lipsync: (ctx) => [ffmpegReadiness(ctx), ...lipsyncReadiness(ctx)],
  music: musicKindReadiness,
};

/** Every kind's checks for `serve`: its own, plus writable directories and disk space. */
export function readinessChecks(ctx: ReadinessContext): KindChecks {
  const shared = [writableDirCheck('results-dir', ctx.settings.resultsDir), writableDirCheck('temp-dir', ctx.config.tmpDir)];
  if (ctx.config.modelFilesDir !== undefined) shared.push(writableDirCheck('model-files-dir', ctx.config.modelFilesDir));
  const out: KindChecks = {};
  for (const kind of Object.keys(KIND_READINESS) as JobKind[]) {
    const disk = diskSpaceCheck({
      tempDir: ctx.config.tmpDir,
      resultsDir: ctx.settings.resultsDir,
      need: diskNeed(kind, ctx.config),
      reserveBytes: ctx.settings.diskReserveMb * 1024 * 1024,
      ...definedFields({ freeBytes: ctx.freeBytes }),
    });
    out[kind] = [...shared, disk, ...KIND_READINESS[kind](ctx)];
  }
  return out;
}
