import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  maySell,
  type LicenceFacts,
  adoptNetwork,
  AdoptError,
  ensureModelFile,
  listManifests,
  allowModelFetching,
  unfilledFields,
  PRECISION_PSNR_FLOOR_DB,
  type ModelManifest,
  type Range,
} from '../../inference/index.js';
import { folderModels, modelGenerators, registryOptions } from '../../app/index.js';
import { cliContext } from '../context.js';
import { EXIT_FAILURE, EXIT_OK, reportFailure } from '../exit.js';
import { voice } from '../voice.js';

/** The licence and whether a paid service may run the network (inference/licence.ts). */
function licenceColumn(licence: LicenceFacts | null | undefined): string {
  return `${(licence?.spdx ?? 'licence not recorded').padEnd(28)} ${`may be sold: ${maySell(licence)}`.padEnd(21)}`;
}

export function registerModels(program: Command): void {
  const models = program
    .command('models')
    .summary('list the model manifests, or produce and verify their weights')
    .description(
      'Model manifests live in MEDIA_WORKER_MODELS_DIR (*.json); weights are verified against their sha256.',
    );

  models
    .command('list')
    .description(
      'Prints one line per manifest: name, task, scale (super-resolution), its licence and whether a paid service may run it ' +
        '(`serve` refuses one that may not unless MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS=1), file, and whether the file is present ' +
        '(in MEDIA_WORKER_MODEL_FILES_DIR, else MEDIA_WORKER_MODELS_DIR); a reduced-precision variant measured by ' +
        '`media-worker bench precision-gate` gets a second line with its figures against its float32 network and whether it passes the gate.',
    )
    .option('--json', "print the manifests as JSON (a variant's figures are its `gate`)")
    .action(async (opts: { json?: boolean }) => {
      try {
        const { config } = cliContext();
        const registry = registryOptions(config);
        const manifests = await listManifests(registry);
        const filesDir = path.resolve(registry.filesDir ?? registry.modelsDir);
        if (opts.json === true) {
          process.stdout.write(
            `${JSON.stringify(
              manifests.map((m) => ({ ...m, maySell: maySell(m.licence) })),
              null,
              2,
            )}\n`,
          );
        } else {
          for (const m of manifests) {
            const scale = m.task === 'super-resolution' ? `x${m.scale}` : '';
            const file = path.join(filesDir, m.file);
            const installed = m.source.kind === 'external' || m.source.kind === 'adopted';
            const state = existsSync(file)
              ? 'present'
              : installed
                ? 'missing (operator-installed)'
                : 'missing (made on first use)';
            const unfilled = unfilledFields(m);
            const note =
              unfilled.length === 0
                ? ''
                : `; ${unfilled.join(' and ')} not filled in (${path.join(path.resolve(registry.modelsDir), `${m.name}.json`)})`;
            process.stdout.write(
              `${m.name.padEnd(24)} ${m.task.padEnd(18)} ${scale.padEnd(4)} ${licenceColumn(m.licence)} ${m.file.padEnd(28)} ${state}${note}\n`,
            );
            const gate = gateLine(m);
            if (gate !== undefined) process.stdout.write(`  ${gate}\n`);
          }
          for (const f of await folderModels(config, filesDir)) {
            process.stdout.write(
              `${f.name.padEnd(24)} ${f.task.padEnd(18)} ${''.padEnd(4)} ${licenceColumn(f.licence)} ${f.folder}\n`,
            );
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
        if (unknown.length > 0)
          throw new Error(`Unknown model ${unknown.join(', ')}; known: ${manifests.map((m) => m.name).join(', ')}`);
        let failed = 0;
        for (const m of chosen) {
          if (m.source.kind === 'external' || m.source.kind === 'adopted') {
            process.stdout.write(`${m.name}: not installed here (operator-provided weights); see its manifest\n`);
            continue;
          }
          try {
            const file = await ensureModelFile(m.name, {
              ...registryOptions(config),
              generators: modelGenerators(),
              logger,
            });
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

  models
    .command('add')
    .description(
      'Adopts a super-resolution network of your own: reads the graph (one float32 NCHW RGB input and output, free height and ' +
        'width), finds its scale and input range by a probe run, counts its multiply-adds per pixel, measures its memory per ' +
        'tile pixel and how far its output pixels reach, checks that tiled and untiled runs agree, then copies the file into ' +
        'MEDIA_WORKER_MODEL_FILES_DIR (else MEDIA_WORKER_MODELS_DIR) and writes NAME.json beside the shipped manifests. ' +
        'Its licence and source.url are left for you to fill in (models list says so). A file it cannot use is refused in ' +
        'one line and nothing is written.',
    )
    .argument('<FILE>', 'the .onnx file')
    .requiredOption(
      '--name <NAME>',
      'its name in the registry (lower-case letters, digits, dots, dashes): --model NAME, MEDIA_WORKER_SR_MODELS',
    )
    .option(
      '--range <LOW,HIGH>',
      'the input range it was trained on (default: found by the probe among 0,1 0,255 -1,1)',
    )
    .option('--description <TEXT>', "the manifest's description")
    .option('--threads <N>', 'ONNX Runtime threads for the probes (default: one per core)')
    .action(async (file: string, opts: { name: string; range?: string; description?: string; threads?: string }) => {
      try {
        const { config } = cliContext();
        const registry = registryOptions(config);
        const report = await adoptNetwork({
          file,
          name: opts.name,
          registry,
          ...(opts.range === undefined ? {} : { range: rangeOption(opts.range) }),
          ...(opts.description === undefined ? {} : { description: opts.description }),
          ...(opts.threads === undefined ? {} : { threads: Number(opts.threads) }),
          progress: (line) => voice().say(`  ${line}`, { msg: line }),
        });
        const m = report.manifest;
        process.stdout.write(
          `adopted ${m.name}: x${m.scale}, input range [${m.input.range.join(', ')}], ${m.macsPerInputPixel} multiply-adds per input pixel, ` +
            `${m.tile.bytesPerPixel} bytes per tile pixel, tile ${m.tile.size} overlap ${m.tile.overlap}, sha256 ${m.sha256}\n` +
            `wrote ${report.filePath}\nwrote ${report.manifestPath} (fill in its licence and source.url)\n`,
        );
        process.exitCode = EXIT_OK;
      } catch (err) {
        process.exitCode = reportFailure(
          err instanceof AdoptError ? new Error(`cannot adopt ${file}: ${err.message}; nothing written`) : err,
        );
      }
    });
}

/**
 * A reduced-precision variant's gate figures (bench/inference/precision-gate.ts) in one line, or
 * undefined for a manifest without them:
 * `int8 of realesrgan-x4fast: PSNR min 36.9 dB (gate 40), mean 38.3; ΔE 0.84 (tolerance 1.77), sharpness 1.17, tiled 0/255, 2.1x float32: not offered by default`.
 */
export function gateLine(manifest: ModelManifest): string | undefined {
  if (manifest.task !== 'super-resolution' || manifest.gate === undefined) return undefined;
  const g = manifest.gate;
  const source = manifest.source;
  const what = source.kind === 'int8' || source.kind === 'float16' ? `${source.kind} of ${source.of}` : 'variant';
  return (
    `${what}: PSNR min ${g.psnrMinDb.toFixed(1)} dB (gate ${PRECISION_PSNR_FLOOR_DB}), mean ${g.psnrMeanDb.toFixed(1)}; ` +
    `ΔE ${g.colourDeltaE.toFixed(2)} (tolerance ${g.colourToleranceDeltaE.toFixed(2)}), sharpness ${g.sharpnessRatio.toFixed(2)}, ` +
    `tiled ${g.tiledMaxDiff}/255, ${g.speedVsFloat32.toFixed(1)}x float32: ${g.passes ? 'passes the gate' : 'not offered by default'}`
  );
}

function rangeOption(text: string): Range {
  const [low, high, ...rest] = text.split(',').map(Number);
  if (
    low === undefined ||
    high === undefined ||
    rest.length > 0 ||
    !Number.isFinite(low) ||
    !Number.isFinite(high) ||
    !(low < high)
  ) {
    throw new AdoptError(
      `Expected --range LOW,HIGH with LOW < HIGH (0,1 or 0,255) but received ${JSON.stringify(text)}`,
    );
  }
  return [low, high];
}
