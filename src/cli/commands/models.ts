import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ensureModelFile, listManifests, allowModelFetching } from '../../inference/index.js';
import { registryOptions } from '../../app/index.js';
import { cliContext } from '../context.js';
import { EXIT_FAILURE, EXIT_OK, reportFailure } from '../exit.js';

export function registerModels(program: Command): void {
  const models = program
    .command('models')
    .summary('list the model manifests, or produce and verify their weights')
    .description('Model manifests live in MEDIA_WORKER_MODELS_DIR (*.json); weights are verified against their sha256.');

  models
    .command('list')
    .description(
      'Prints one line per manifest: name, task, scale (super-resolution), file, and whether the file is present ' +
        '(in MEDIA_WORKER_MODEL_FILES_DIR, else MEDIA_WORKER_MODELS_DIR).',
    )
    .option('--json', 'print the manifests as JSON')
    .action(async (opts: { json?: boolean }) => {
      try {
        const { config } = cliContext();
        const registry = registryOptions(config);
        const manifests = await listManifests(registry);
        const filesDir = path.resolve(registry.filesDir ?? registry.modelsDir);
        if (opts.json === true) {
          process.stdout.write(`${JSON.stringify(manifests, null, 2)}\n`);
        } else {
          for (const m of manifests) {
            const scale = m.task === 'super-resolution' ? `x${m.scale}` : '';
            const file = path.join(filesDir, m.file);
            const state = existsSync(file) ? 'present' : m.source.kind === 'external' ? 'missing (operator-installed)' : 'missing (made on first use)';
            process.stdout.write(`${m.name.padEnd(24)} ${m.task.padEnd(18)} ${scale.padEnd(4)} ${m.file.padEnd(28)} ${state}\n`);
          }
        }
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });

  models
    .command('prepare')
    .description(
      'Converts (or fetches) every model whose weights are missing and verifies every checksum, writing into ' +
        'MEDIA_WORKER_MODEL_FILES_DIR (else MEDIA_WORKER_MODELS_DIR): the install step of a host that must not ' +
        'fetch at run time (MEDIA_WORKER_FETCH_MODELS=false). ' +
        'Models whose weights an operator must install (source "external") are reported, not failed.',
    )
    .argument('[NAME...]', 'only these models')
    .action(async (names: string[]) => {
      try {
        const { config, logger } = cliContext();
        // The install step: it fetches whatever MEDIA_WORKER_FETCH_MODELS says about run time.
        allowModelFetching(true);
        const manifests = await listManifests(registryOptions(config));
        const chosen = names.length === 0 ? manifests : manifests.filter((m) => names.includes(m.name));
        const unknown = names.filter((n) => !manifests.some((m) => m.name === n));
        if (unknown.length > 0) throw new Error(`Unknown model ${unknown.join(', ')}; known: ${manifests.map((m) => m.name).join(', ')}`);
        let failed = 0;
        for (const m of chosen) {
          if (m.source.kind === 'external') {
            process.stdout.write(`${m.name}: not installed here (operator-provided weights); see its manifest\n`);
            continue;
          }
          try {
            const file = await ensureModelFile(m.name, { ...registryOptions(config), logger });
            process.stdout.write(`${m.name}: ok ${file.path}\n`);
          } catch (err) {
            failed += 1;
            process.stdout.write(`${m.name}: FAILED ${(err as Error).message}\n`);
          }
        }
        process.exitCode = failed === 0 ? EXIT_OK : EXIT_FAILURE;
      } catch (err) {
        process.exitCode = reportFailure(err);
      }
    });
}
