/**
 * The music video's runtime half: src/kinds/music-video/pipeline/'s render, its readiness (an ffmpeg with the
 * filters, encoders and demuxers the render uses, a font, and a trial render of each style: no GPU,
 * no network), its disk need. Readiness runs once, at the first check: what it asks of ffmpeg and
 * the fonts does not change while the daemon runs, and its trial render is not worth repeating.
 */
import path from 'node:path';
import { MUSIC_VIDEO_MAX_AUDIO_SECONDS } from '../../jobs/index.js';
import { musicVideoReadiness, renderInputs, renderMusicVideo } from './pipeline/index.js';
import { definedFields } from '../../defined-fields.js';
import type { ReadinessCheck } from '../../worker/index.js';
import type { KindRuntime, ReadinessContext } from '../../app/kind-runtime.js';

/** A bound on the MP4's bit rate (20 Mbit/s; the e2e test's 1080p waveform measures far below it). */
const OUTPUT_BYTES_PER_SECOND = 20_000_000 / 8;

/** The readiness verdict, run once and kept: null when ready, else what is missing, one line. */
function readinessCheck(ctx: ReadinessContext): ReadinessCheck {
  let verdict: Promise<string | null> | undefined;
  return {
    name: 'music-video-ffmpeg',
    run() {
      verdict ??= musicVideoReadiness(
        definedFields({ ffmpegPath: ctx.config.ffmpegPath, tmpDir: ctx.config.tmpDir }),
      ).then((r) => (r.ready ? null : `missing: ${r.missing.join(', ')}`));
      return verdict;
    },
  };
}

export const musicVideoRuntime: KindRuntime<'music-video'> = {
  async run(quoted, { dir, opts, binaries, withSignal }) {
    const outputPath = path.join(dir, 'music-video.mp4');
    const rendered = await renderMusicVideo({
      ...renderInputs(quoted),
      workDir: dir,
      outputPath,
      ...withSignal,
      onProgress: (p) => opts.onProgress?.(p),
      ...definedFields({ ffmpegPath: binaries.ffmpegPath }),
    });
    opts.logger.info(
      { frames: rendered.frames, seconds: rendered.seconds, width: rendered.width, height: rendered.height },
      'music video rendered',
    );
    const stored = await opts.store(outputPath, { taskId: opts.taskId, ext: 'mp4', kind: 'music-video' });
    return {
      url: stored.url,
      type: 'video',
      duration: quoted.price.durationSeconds,
      width: rendered.width,
      height: rendered.height,
    };
  },
  readiness: (ctx) => [readinessCheck(ctx)],
  diskNeed(config) {
    const output = MUSIC_VIDEO_MAX_AUDIO_SECONDS * OUTPUT_BYTES_PER_SECOND;
    return { temp: config.maxAudioBytes + config.maxImageBytes + output, results: output };
  },
  warm() {},
  usesExecutionProvider: false,
  resultExtension: async () => 'mp4',
};
