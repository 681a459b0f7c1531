import { readFile } from 'node:fs/promises';
import { Option, type Command } from 'commander';
import { MUSIC_MODEL, parseJob } from '../../jobs/index.js';
import type { SettingKey } from '../../config.js';
import { MUSIC_BACKEND_NAMES } from './settings.js';
import { cliContext } from '../../cli/context.js';
import { EXIT_OK, reportFailure } from '../../cli/exit.js';
import { runLocally } from '../../cli/local-run.js';

interface MusicFlags {
  prompt?: string;
  lyrics?: string;
  title?: string;
  style?: string;
  instrumental?: boolean;
  vocalGender?: string;
  negativeTags?: string;
  seconds?: string;
  backend?: string;
  output?: string;
}

/** The flags as the spec's music input: custom mode as soon as a title, style or lyrics is given. */
export async function musicInputFromFlags(flags: MusicFlags): Promise<Record<string, unknown>> {
  const custom = flags.title !== undefined || flags.style !== undefined || flags.lyrics !== undefined;
  const instrumental = flags.instrumental === true;
  if (!custom) return { prompt: flags.prompt, instrumental };
  return {
    custom_mode: true,
    title: flags.title,
    // A prompt given with custom fields describes the style when --style is absent.
    style: flags.style ?? flags.prompt,
    ...(flags.lyrics === undefined ? {} : { lyrics: await readFile(flags.lyrics, 'utf8') }),
    instrumental,
    ...(flags.vocalGender === undefined ? {} : { vocal_gender: flags.vocalGender }),
    ...(flags.negativeTags === undefined ? {} : { negative_tags: flags.negativeTags }),
  };
}

export function registerMusic(program: Command): void {
  program
    .command('music')
    .summary('generate two songs from a prompt, or from a title, style and lyrics')
    .description(
      'Generates the two song variations of one music job on this machine with the configured backend ' +
        '(MEDIA_WORKER_MUSIC_BACKENDS, or --backend): each an MP3 and a 1024x1024 JPEG cover in DIR. ' +
        'Simple mode: --prompt (the backend writes lyrics when it can). Custom mode: --title, --style and ' +
        '--lyrics FILE (section tags such as [Verse] and [Chorus] allowed), or --instrumental. musicgen needs ' +
        'its weights (scripts/install-musicgen-model.ts) or MEDIA_WORKER_MUSICGEN_MODEL=musicgen-test for the ' +
        'generated test model. Progress on stderr; prints the completed task object as JSON (docs/music.md).',
    )
    .option('--prompt <TEXT>', 'what the music should be (simple mode; up to 500 characters)')
    .option('--lyrics <FILE>', 'lyrics file (custom mode)')
    .option('--title <TEXT>', 'song title (custom mode; up to 80 characters)')
    .option('--style <TEXT>', 'genre or style (custom mode)')
    .option('--instrumental', 'no vocals')
    .addOption(new Option('--vocal-gender <G>', 'preferred voice (custom mode)').choices(['m', 'f']))
    .option('--negative-tags <TEXT>', 'styles to exclude (custom mode)')
    .option('--seconds <N>', 'length of each song (MEDIA_WORKER_MUSIC_SECONDS)')
    .addOption(
      new Option('--backend <NAME>', 'music backend for this run (MEDIA_WORKER_MUSIC_BACKENDS)').choices([
        ...MUSIC_BACKEND_NAMES,
      ]),
    )
    .option('-o, --output <DIR>', 'directory for the songs and covers (default: current directory)')
    .action(async (flags: MusicFlags) => {
      try {
        const overrides: Partial<Record<SettingKey, string>> = {
          ...(flags.seconds === undefined ? {} : { musicSeconds: flags.seconds }),
          ...(flags.backend === undefined ? {} : { musicBackends: flags.backend }),
        };
        const ctx = cliContext(overrides);
        const job = parseJob({ model: MUSIC_MODEL, input: await musicInputFromFlags(flags) });
        const task = await runLocally(job, ctx, { defaultStem: 'music', output: flags.output ?? '.' });
        process.stdout.write(`${JSON.stringify({ ...task, mediaType: 'music' })}\n`);
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}
