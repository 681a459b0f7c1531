import type { Command } from 'commander';
import { allSettingsReference, findUnknownSettings, SETTINGS_SECTIONS } from '../../config.js';
import { SettingsError, shownSetting, unknownSettingMessage } from '../../settings-table.js';
import { unreadableFiles } from '../../protocol/index.js';
import { EXIT_FAILURE, EXIT_OK, reportFailure } from '../exit.js';
import { voice } from '../voice.js';

export function registerConfig(program: Command): void {
  program
    .command('config')
    .summary('print and check the effective settings of every command, or the reference of all settings')
    .description(
      'Reads every setting of every command (the pipelines and the daemon, `serve`) from the environment, ' +
        'checks each as the command using it would at start, and prints them as JSON keyed by variable ' +
        '(credentials shown as "(set)", passwords and tokens in URLs as ***). Exits 1 naming every invalid variable. Variables with a project ' +
        'prefix (MEDIA_WORKER_, WORKER_, NATS_, RESULTS_, ...) that no setting reads are warned about on stderr, ' +
        'with the closest setting.',
    )
    .option('--reference', 'print the Markdown table of every setting instead')
    .action((opts: { reference?: boolean }) => {
      if (opts.reference === true) {
        process.stdout.write(`${allSettingsReference()}\n`);
        return;
      }
      try {
        for (const unknown of findUnknownSettings(process.env)) {
          const message = unknownSettingMessage(unknown);
          voice().say(`media-worker: warning: ${message}`, {
            level: 'warn',
            msg: message,
            variable: unknown.name,
            closest: unknown.closest,
          });
        }
        const { effective, problems } = effectiveSettings(process.env);
        if (problems.length > 0) {
          for (const problem of problems) voice().say(`media-worker: ${problem}`, { level: 'error', msg: problem });
          process.exitCode = EXIT_FAILURE;
          return;
        }
        process.stdout.write(`${JSON.stringify(effective, null, 2)}\n`);
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}

/** Every section's settings by variable name, or every problem of every section. */
export function effectiveSettings(env: NodeJS.ProcessEnv): {
  effective: Record<string, Record<string, unknown>>;
  problems: string[];
} {
  const effective: Record<string, Record<string, unknown>> = {};
  const problems: string[] = [];
  for (const section of SETTINGS_SECTIONS) {
    let values: Record<string, unknown>;
    try {
      values = section.load(env);
    } catch (err) {
      if (!(err instanceof SettingsError)) throw err;
      problems.push(...err.message.split('\n'));
      continue;
    }
    const shown: Record<string, unknown> = {};
    for (const [key, spec] of Object.entries(section.table)) shown[spec.env] = shownSetting(spec, values[key]);
    effective[section.key] = shown;
    // Credential files are looked at here, not by the settings parser: examples name files of other hosts.
    if (section.key === 'daemon') problems.push(...unreadableFiles(values));
  }
  return { effective, problems };
}
