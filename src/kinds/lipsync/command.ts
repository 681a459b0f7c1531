import { Option, type Command } from 'commander';
import path from 'node:path';
import { LIPSYNC_MODEL_IDS, SYNC_MODES, normaliseToolBody } from '../../jobs/index.js';
import { cliContext } from '../../cli/context.js';
import { EXIT_OK, reportFailure } from '../../cli/exit.js';
import { runLocally } from '../../cli/local-run.js';
import { definedFields } from '../../defined-fields.js';

export function registerLipsync(program: Command): void {
  program
    .command('lipsync')
    .summary('drive the mouth of the face in a video with an audio track')
    .description(
      'Lip-syncs VIDEO (MP4, MOV, WebM, M4V or GIF, up to 30 s) to AUDIO (MP3, WAV, AAC, OGG or M4A) and writes ' +
        'an MP4. The sync mode decides the output length when the two differ. Runs on the first ready backend of ' +
        'MEDIA_WORKER_LIPSYNC_BACKENDS that serves the model: wav2lip needs lip-sync weights (install real ones with ' +
        'scripts/install-lipsync-model.ts, whose licence allows your own use only, or set MEDIA_WORKER_LIPSYNC_MODELS=wav2lip-test ' +
        'for the generated test model); musetalk runs MuseTalk 1.5 for vendor-lipsync-2 and -2-pro (install it with ' +
        'scripts/install-musetalk-model.ts and set MEDIA_WORKER_LIPSYNC_MODELS=musetalk, or musetalk-test for the generated test networks, ' +
        'with MEDIA_WORKER_LIPSYNC_BACKENDS=musetalk,wav2lip); ' +
        'sync-compatible sends URLs to the provider (MEDIA_WORKER_SYNC_BASE_URL, ' +
        'MEDIA_WORKER_SYNC_API_KEY) and uploads local files with its multipart form. Prints the completed task object as JSON.',
    )
    .requiredOption('--video <V>', 'video file or https URL')
    .requiredOption('--audio <A>', 'audio file or https URL')
    .addOption(
      new Option('--sync-mode <M>', 'what to do when the lengths differ').choices([...SYNC_MODES]).default('cut_off'),
    )
    .addOption(new Option('--model <ID>', 'lip-sync model').choices([...LIPSYNC_MODEL_IDS]).default('vendor-lipsync-2'))
    .option('--active-speaker', 'with several faces, drive only the one whose mouth follows the audio')
    .option('-o, --output <PATH>', 'result file, or a directory for it (default: <video name>-lipsync.mp4 here)')
    .action(
      async (opts: {
        video: string;
        audio: string;
        syncMode: string;
        model: string;
        activeSpeaker?: boolean;
        output?: string;
      }) => {
        try {
          const ctx = cliContext();
          const job = normaliseToolBody('lipsync', {
            video_url: opts.video,
            audio_url: opts.audio,
            sync_mode: opts.syncMode,
            model: opts.model,
            active_speaker: opts.activeSpeaker === true,
          });
          const task = await runLocally(job, ctx, {
            defaultStem: `${path.parse(new URL(opts.video, 'file:///').pathname).name || 'video'}-lipsync`,
            ...definedFields({ output: opts.output }),
          });
          process.stdout.write(`${JSON.stringify(task)}\n`);
          process.exitCode = EXIT_OK;
        } catch (err) {
          process.exitCode = reportFailure(err);
        }
      },
    );
}
