import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { mediaDepsOptions } from '../../app/index.js';
import { createMediaDeps, withJobDir } from '../../media/index.js';
import {
  MUSIC_VIDEO_ASPECT_RATIOS,
  MUSIC_VIDEO_MODEL,
  MUSIC_VIDEO_STYLES,
  parseMusicVideoInput,
  quoteMusicVideo,
  renderInputs,
  renderMusicVideo,
} from './pipeline/index.js';
import { definedFields } from '../../defined-fields.js';
import { cliContext } from '../../cli/context.js';
import { EXIT_OK, reportFailure } from '../../cli/exit.js';
import { moveFile } from '../../cli/local-run.js';
import { namedOutputFile, refuseMisnamed } from '../../cli/output-name.js';
import { createCliProgress } from '../../cli/progress.js';

interface MusicVideoFlags {
  audio: string;
  image: string;
  title?: string;
  style?: string;
  aspectRatio?: string;
  font?: string;
  output?: string;
}

const list = (values: readonly string[]): string => values.join(', ');

export function registerMusicVideo(program: Command): void {
  program
    .command('music-video')
    .summary('make an MP4 of a song: its cover, a title and a visualiser that moves with the sound')
    .description(
      'Renders AUDIO (MP3, WAV, AAC, OGG, M4A or FLAC, up to 8 minutes) with the cover IMAGE (JPEG, PNG or WebP) ' +
        'into an MP4 (H.264 and AAC, 30 fps, as long as the audio): the cover fitted without stretching over a ' +
        "blurred copy of itself, the title under it, and the visualiser (--style). A generated song's MP3 and cover " +
        'work as they are. First prints the measured duration and the price, then the frames rendered with an ETA on ' +
        'stderr; prints the completed task object as JSON (docs/music-video.md).',
    )
    .requiredOption('--audio <A>', 'audio file or https URL')
    .requiredOption('--image <I>', 'cover image file or https URL')
    .option('--title <T>', 'title drawn on the video (up to 80 characters)')
    .option('--style <S>', `visualiser: ${list(MUSIC_VIDEO_STYLES)} (default: waveform)`)
    .option('--aspect-ratio <R>', `${list(MUSIC_VIDEO_ASPECT_RATIOS)}: 1920x1080, 1080x1080, 1080x1920 (default: 16:9)`)
    .option('--font <FILE>', "the title's font file (default: fontconfig's DejaVu Sans Bold)")
    .option('-o, --output <PATH>', 'result file, or a directory for it (default: <audio name>-video.mp4 here)')
    .action(async (flags: MusicVideoFlags) => {
      try {
        process.stdout.write(`${JSON.stringify(await musicVideoCommand(flags))}\n`);
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}

async function musicVideoCommand(flags: MusicVideoFlags): Promise<Record<string, unknown>> {
  const createdAt = new Date().toISOString();
  const ctx = cliContext();
  // Parsed as the service parses it: a wrong --style gets INVALID_STYLE, as over the API.
  const input = parseMusicVideoInput({
    audio_url: flags.audio,
    image_url: flags.image,
    ...definedFields({ title: flags.title, style: flags.style, aspect_ratio: flags.aspectRatio }),
  });
  const stem = `${path.parse(new URL(flags.audio, 'file:///').pathname).name || 'music'}-video`;
  // -o names the file (which must say .mp4) or a directory for it (cli/output-name.ts).
  const named = await namedOutputFile(flags.output);
  if (named !== undefined) refuseMisnamed(named, 'mp4');
  const target = named ?? path.resolve(flags.output ?? '.', `${stem}.mp4`);
  const abort = new AbortController();
  const onSignal = (): void => abort.abort(new Error('Interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const taskId = `local-${randomUUID()}`;
  // Two lines of progress: the quote's (closed with the price), then the render's frames and ETA.
  const logger = ctx.logger.child({ taskId, model: MUSIC_VIDEO_MODEL });
  const measuring = createCliProgress(logger);
  const rendering = createCliProgress(logger);
  try {
    return await withJobDir(
      taskId,
      async (dir) => {
        measuring.report({ stage: 'fetching and measuring' });
        const deps = createMediaDeps(
          mediaDepsOptions(ctx.config, { dir, allowLocalPaths: true, signal: abort.signal }),
        );
        const quoted = await quoteMusicVideo({ model: MUSIC_VIDEO_MODEL, input }, deps, {
          signal: abort.signal,
          ...definedFields({ ffmpegPath: ctx.config.ffmpegPath }),
        });
        const { price } = quoted;
        measuring.close(
          `${quoted.quote.input.detected_duration} of audio: ${price.creditsUsed} credits (${price.billedSeconds} s x ${price.creditsPerSecond}, at least ${price.minimumCredits})`,
        );
        const rendered = await renderMusicVideo({
          ...renderInputs(quoted),
          workDir: dir,
          outputPath: path.join(dir, 'music-video.mp4'),
          signal: abort.signal,
          onProgress: (p) => rendering.report(p),
          ...definedFields({ ffmpegPath: ctx.config.ffmpegPath, fontFile: flags.font }),
        });
        await mkdir(path.dirname(target), { recursive: true });
        await moveFile(rendered.path, target);
        rendering.close(`done: ${target}`);
        return {
          id: taskId,
          model: MUSIC_VIDEO_MODEL,
          status: 'completed',
          result: {
            url: target,
            type: 'video',
            duration: price.durationSeconds,
            width: rendered.width,
            height: rendered.height,
          },
          creditsUsed: price.creditsUsed,
          createdAt,
        };
      },
      { root: ctx.config.tmpDir },
    );
  } finally {
    measuring.close();
    rendering.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
