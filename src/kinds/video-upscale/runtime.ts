/** The video upscale's runtime half: its pipeline (pipeline/), its networks and ffmpeg, its disk need. */
import path from 'node:path';
import { VIDEO_UPSCALE_MAX_SECONDS } from '../../jobs/index.js';
import { SR_FACTORS } from '../../inference/index.js';
import { isImageFormat } from '../../media/index.js';
import { upscaleVideoFile } from './pipeline/index.js';
import { videoResultFormat } from '../../video/index.js';
import type { KindRuntime } from '../../app/kind-runtime.js';
import { VIDEO_OUTPUT_BYTES_PER_SECOND, ffmpegReadiness, srReadiness } from '../../app/readiness-checks.js';

export const videoUpscaleRuntime: KindRuntime<'video'> = {
  async run(quoted, { dir, engine, opts, binaries, upscaleChoices }) {
    const { config } = engine;
    // Matroska in, Matroska out (docs/contract.md, "Video fidelity"): the name says the container.
    const { ext } = videoResultFormat(quoted.probes.video.container);
    const outputPath = path.join(dir, `output.${ext}`);
    const outcome = await upscaleVideoFile(
      {
        inputPath: quoted.inputs.video.path,
        outputPath,
        factor: quoted.job.input.upscale_factor,
        info: quoted.probes.video,
        hdr: quoted.job.input.hdr ?? config.videoHdr,
        encoder: { codec: config.videoEncoder, crf: config.videoCrf, preset: config.videoPreset },
        framesInFlight: config.videoFramesInFlight,
        ...binaries,
        ...upscaleChoices,
        onProgress: (p) =>
          opts.onProgress?.({ stage: 'upscaling', done: p.framesDone, total: p.framesTotal, unit: 'frames' }),
        logger: opts.logger,
      },
      engine.loadSrModel,
    );
    opts.logger.info(
      {
        srModel: outcome.model,
        frames: outcome.frames,
        width: outcome.width,
        height: outcome.height,
        encoder: outcome.encoder,
      },
      'video upscaled',
    );
    const stored = await opts.store(outputPath, { taskId: opts.taskId, ext, kind: 'video' });
    return {
      url: stored.url,
      type: 'video',
      width: outcome.width,
      height: outcome.height,
      duration: outcome.durationSeconds,
      frames: outcome.frames,
    };
  },
  readiness: (ctx) => [srReadiness(ctx, 'video'), ffmpegReadiness(ctx)],
  diskNeed(config) {
    const output = VIDEO_UPSCALE_MAX_SECONDS * VIDEO_OUTPUT_BYTES_PER_SECOND;
    return { temp: config.maxVideoBytes + output, results: output };
  },
  warm(ctx) {
    for (const f of SR_FACTORS) ctx.sr('video', f);
  },
  usesExecutionProvider: true,
  async resultExtension(job, sniff) {
    const sniffed = await sniff(job.input.video_url);
    return sniffed === undefined || isImageFormat(sniffed) ? undefined : videoResultFormat(sniffed).ext;
  },
};
