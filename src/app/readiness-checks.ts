/**
 * The readiness checks the kinds' runtimes share (src/app/kinds/): a writable directory, a check
 * that passes once an attempt succeeded, the default super-resolution networks, ffmpeg. Each kind
 * lists its own in its runtime's `readiness`; readiness.ts adds the shared directory and disk checks.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ensureModelFile, chooseSrModel, type SrUse } from '../inference/index.js';
import { JOB_DIR_PREFIX, ownerToken, resolveFfmpeg } from '../media/index.js';
import { registryOptions } from './layer-options.js';
import type { ReadinessCheck } from '../worker/index.js';
import type { ReadinessContext } from './kind-runtime.js';
import { errorMessage } from '../errors.js';
import { definedFields } from '../defined-fields.js';

/** Bytes per second of an encoded video result, a generous bound (4K H.264 at CRF 18 stays below). */
export const VIDEO_OUTPUT_BYTES_PER_SECOND = 60_000_000 / 8;

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
export function check(name: string, attempt: () => Promise<unknown>): ReadinessCheck {
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
export function srReadiness(ctx: ReadinessContext, use: Extract<SrUse, 'image' | 'video'>): ReadinessCheck {
  const registry = { ...registryOptions(ctx.config), logger: ctx.logger };
  const names = new Set((['1', '2', '4'] as const).map((factor) => chooseSrModel(ctx.config.srModels, use, factor)));
  return check('sr-models', async () => {
    for (const name of names) await ensureModelFile(name, registry);
  });
}

export function ffmpegReadiness(ctx: ReadinessContext): ReadinessCheck {
  return check('ffmpeg', async () => resolveFfmpeg(definedFields({ ffmpegPath: ctx.config.ffmpegPath })));
}
