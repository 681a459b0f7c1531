/** The image upscale's runtime half: its pipeline (pipeline/), the default networks, its disk need. */
import path from 'node:path';
import { definedFields } from '../../defined-fields.js';
import { IMAGE_MAX_OUTPUT_MEGAPIXELS } from '../../jobs/index.js';
import { SR_FACTORS } from '../../inference/index.js';
import { isImageFormat } from '../../media/index.js';
import { upscaleImageFile } from './pipeline/index.js';
import type { KindRuntime } from '../../app/kind-runtime.js';
import { srReadiness } from '../../app/readiness-checks.js';

/** The result's extension: the input's format (a JPEG is written `.jpg`). */
const extensionOf = (format: string): string => (format === 'jpeg' ? 'jpg' : format);

export const imageUpscaleRuntime: KindRuntime<'image'> = {
  async run(quoted, { dir, engine, opts, upscaleChoices }) {
    const ext = extensionOf(quoted.probes.image.format);
    const outputPath = path.join(dir, `output.${ext}`);
    const outcome = await upscaleImageFile(
      {
        inputPath: quoted.inputs.image.path,
        outputPath,
        factor: quoted.job.input.upscale_factor,
        info: quoted.probes.image,
        ...upscaleChoices,
        // The quote's estimate: before the first tile is done, the pace of one (worker/step-clock.ts).
        onProgress: (done, total) =>
          opts.onProgress?.({
            stage: 'upscaling',
            done,
            total,
            unit: 'tiles',
            ...definedFields({ estimatedSeconds: quoted.quote.estimated_seconds }),
          }),
      },
      engine.loadSrModel,
    );
    opts.logger.info(
      { srModel: outcome.model, tile: outcome.tile, width: outcome.width, height: outcome.height },
      'image upscaled',
    );
    const stored = await opts.store(outputPath, { taskId: opts.taskId, ext, kind: 'image' });
    return { url: stored.url, type: 'image', width: outcome.width, height: outcome.height, format: outcome.format };
  },
  readiness: (ctx) => [srReadiness(ctx, 'image')],
  diskNeed(config) {
    const output = IMAGE_MAX_OUTPUT_MEGAPIXELS * 1_000_000 * 4;
    return { temp: config.maxImageBytes + output, results: output };
  },
  warm(ctx) {
    for (const f of SR_FACTORS) ctx.sr('image', f);
  },
  usesExecutionProvider: true,
  async resultExtension(job, sniff) {
    const sniffed = await sniff(job.input.image_url);
    return sniffed !== undefined && isImageFormat(sniffed) ? extensionOf(sniffed) : undefined;
  },
};
