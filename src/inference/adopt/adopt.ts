/**
 * Adopting an operator's super-resolution network (`media-worker models add FILE.onnx --name NAME`):
 * read the graph (graph-facts.ts), count its cost per pixel (graph-cost.ts), run the probes
 * (probes.ts) on the original file, and only when every check passed copy the file into the
 * registry and write a manifest like the shipped ones, with the licence and provenance left for
 * the operator. A refusal names the reason in one line and writes nothing. Then `--model NAME`,
 * MEDIA_WORKER_SR_MODELS and the benchmarks run it like a shipped network.
 */
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { BUNDLED_PHOTOS_DIR } from '../../paths.js';
import { sha256Hex, writeFileAtomic } from '../convert/convert.js';
import { decodeModel } from '../convert/onnx-builder.js';
import { macsPerInputPixel } from '../graph-cost.js';
import {
  formatManifest,
  MANIFEST_SCHEMA_VERSION,
  superResolutionManifestSchema,
  type SuperResolutionManifest,
} from '../manifest.js';
import { defaultModelsDir, type RegistryOptions } from '../model-registry.js';
import { openSession } from '../session.js';
import {
  AdoptError,
  checkImageGraph,
  describeAxes,
  describeOperators,
  readGraphFacts,
  type GraphFacts,
} from './graph-facts.js';
import {
  checkTiledAgreement,
  measureBytesPerPixel,
  measureReach,
  photoCrop,
  probeScaleAndRange,
  type Range,
  type ScaleProbe,
  type TilingAgreement,
} from './probes.js';

const NAME = /^[a-z0-9][a-z0-9.-]*$/;
/** The tile side adopted networks start from, as the shipped ones (a memory budget may change it). */
const DEFAULT_TILE = 512;
/** Largest 8-bit difference tolerated between tiled and untiled output (float sums in another order). */
const MAX_TILED_DIFF = 1;
/** Fur: texture in every crop, so that the scale and range probe never runs on a flat patch. */
const PROBE_PHOTO = path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png');
/** 512x512: room for the widest crops of the reach and tiling probes. */
const LARGE_PHOTO = path.join(BUNDLED_PHOTOS_DIR, 'astronaut.png');

export interface AdoptOptions {
  /** The .onnx file to adopt. */
  file: string;
  name: string;
  registry?: RegistryOptions;
  /** The input range, when the probe should not decide it. */
  range?: Range;
  description?: string;
  /** ONNX Runtime threads for the probes (0: one per core). */
  threads?: number;
  /** Told each finding as it is made. */
  progress?: (line: string) => void;
  now?: () => Date;
}

export interface AdoptReport {
  manifest: SuperResolutionManifest;
  manifestPath: string;
  filePath: string;
  facts: GraphFacts;
  probe: ScaleProbe;
  agreement: TilingAgreement;
}

function targets(name: string, registry: RegistryOptions): { manifestPath: string; filePath: string } {
  const modelsDir = path.resolve(registry.modelsDir ?? defaultModelsDir());
  const filesDir = path.resolve(registry.filesDir ?? modelsDir);
  return { manifestPath: path.join(modelsDir, `${name}.json`), filePath: path.join(filesDir, `${name}.onnx`) };
}

function countMacs(bytes: Uint8Array): number {
  try {
    const graph = decodeModel(bytes).graph;
    const macs = graph === null || graph === undefined ? 0 : macsPerInputPixel(graph);
    if (!(macs > 0)) throw new Error('it has no convolutions');
    return macs;
  } catch (cause) {
    throw new AdoptError(
      `its cost per pixel cannot be counted from the graph (src/inference/graph-cost.ts): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

/** Checks and measures the network, then writes it into the registry; throws AdoptError (nothing written) when it cannot be used. */
export async function adoptNetwork(options: AdoptOptions): Promise<AdoptReport> {
  const { name, registry = {}, progress = () => undefined, now = () => new Date() } = options;
  if (!NAME.test(name))
    throw new AdoptError(
      `Expected --name of lower-case letters, digits, dots and dashes but received ${JSON.stringify(name)}`,
    );
  const { manifestPath, filePath } = targets(name, registry);
  if (existsSync(manifestPath))
    throw new AdoptError(`a model named ${name} exists already (${manifestPath}): choose another --name`);
  if (existsSync(filePath))
    throw new AdoptError(`${filePath} exists already: choose another --name, or remove that file`);

  const source = path.resolve(options.file);
  const bytes = new Uint8Array(
    await readFile(source).catch((cause: unknown) => {
      throw new AdoptError(`cannot read ${source}: ${cause instanceof Error ? cause.message : String(cause)}`, {
        cause,
      });
    }),
  );
  const facts = readGraphFacts(bytes);
  progress(
    `graph: input ${facts.input.name} ${describeAxes(facts.input.axes)} ${facts.input.elementType}, output ${facts.output.name} ${describeAxes(facts.output.axes)} ${facts.output.elementType}; opset ${facts.opset}, ${facts.params} parameters${facts.float16Weights ? ', float16 weights' : ''}`,
  );
  checkImageGraph(facts);
  const macs = countMacs(bytes);
  progress(`cost: ${macs} multiply-adds per input pixel (counted from the graph)`);

  const session = await openSession(source, { executionProviders: ['cpu'], threads: options.threads ?? 0 }).catch(
    (cause: unknown) => {
      throw new AdoptError(
        `ONNX Runtime cannot open it: ${(cause instanceof Error ? cause.message : String(cause)).split('\n')[0]}`,
        { cause },
      );
    },
  );
  let probe: ScaleProbe;
  let bytesPerPixel: number;
  let reach: number;
  let agreement: TilingAgreement;
  try {
    probe = await probeScaleAndRange(session, await photoCrop(PROBE_PHOTO, 40, 32, 180, 120), options.range);
    const tried = probe.psnrByRange.map((p) => `[${p.range.join(', ')}] ${p.psnr.toFixed(1)} dB`).join(', ');
    progress(
      `scale: x${probe.scale} (${probe.inputSize} in, ${probe.outputSize} out); input range [${probe.range.join(', ')}] (${options.range === undefined ? 'output against bicubic' : 'given'}: ${tried})`,
    );
    bytesPerPixel = await measureBytesPerPixel(
      session,
      (side) => photoCrop(PROBE_PHOTO, side, side, 0, 0),
      probe.range,
    );
    progress(`memory: ${bytesPerPixel} bytes per tile input pixel (peak resident set, CPU, float32)`);
    reach = await measureReach(session, LARGE_PHOTO, probe.scale, probe.range);
    progress(`reach: a change of one input pixel moves output up to ${reach} input pixels away: overlap ${reach}`);
    agreement = await checkTiledAgreement(session, LARGE_PHOTO, probe.scale, probe.range, reach);
    progress(
      `tiling: ${agreement.width}x${agreement.height} in ${agreement.tiles} tiles of ${agreement.tile} (overlap ${agreement.overlap}) against one untiled call: largest difference ${agreement.maxDiff} (8-bit)`,
    );
  } finally {
    await session.release();
  }
  if (agreement.maxDiff > MAX_TILED_DIFF) {
    throw new AdoptError(
      `tiled and untiled runs disagree by ${agreement.maxDiff} (8-bit) at overlap ${agreement.overlap}, more than ${MAX_TILED_DIFF}: the network reaches further than measured`,
    );
  }

  const adoptedAt = now().toISOString();
  const manifest = superResolutionManifestSchema.parse({
    schemaVersion: MANIFEST_SCHEMA_VERSION,
    name,
    task: 'super-resolution',
    description:
      options.description ?? `x${probe.scale} super-resolution network adopted from ${path.basename(source)}`,
    file: path.basename(filePath),
    sha256: sha256Hex(bytes),
    bytes: bytes.byteLength,
    format: 'onnx',
    opset: facts.opset,
    params: Math.max(1, facts.params),
    licence: null,
    source: { kind: 'adopted', from: source, adoptedAt, url: null },
    scale: probe.scale,
    architecture: describeOperators(facts),
    input: { name: facts.input.name, dtype: 'float32', layout: 'NCHW', channels: 'RGB', range: [...probe.range] },
    output: { name: facts.output.name, dtype: 'float32', layout: 'NCHW', channels: 'RGB', range: [...probe.range] },
    receptiveFieldRadius: reach,
    macsPerInputPixel: macs,
    tile: { size: DEFAULT_TILE, overlap: reach, batch: 1, bytesPerPixel },
  });

  // The weights first, the manifest last: the registry knows the network only once both are there.
  await writeFileAtomic(filePath, bytes);
  try {
    await writeFileAtomic(manifestPath, new TextEncoder().encode(formatManifest(manifest)));
  } catch (error) {
    await rm(filePath, { force: true });
    throw error;
  }
  return { manifest, manifestPath, filePath, facts, probe, agreement };
}

/** The fields an operator still has to fill in: an adopted network's licence and provenance. */
export function unfilledFields(manifest: Pick<SuperResolutionManifest, 'licence' | 'source'>): string[] {
  return [
    ...(manifest.licence === null ? ['licence'] : []),
    ...(manifest.source.kind === 'adopted' && manifest.source.url === null ? ['source.url'] : []),
  ];
}
