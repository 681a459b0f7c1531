/**
 * Reads a TF.js "layers-model" (a Keras Functional config in model.json plus float32 weight
 * shards) into plain data: the layers with their inputs, and every weight as a Float32Array.
 * Only the subset the UpscalerJS ESRGAN models use is accepted; anything else is refused with a
 * message naming the layer, so a new upstream release cannot be converted silently wrong.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

const inboundRef = z.tuple([z.string(), z.number().int(), z.number().int()]).rest(z.unknown());

const layerSchema = z.object({
  class_name: z.string(),
  name: z.string().optional(),
  config: z.record(z.string(), z.unknown()),
  inbound_nodes: z.array(z.array(inboundRef)),
});

const endpointSchema = z.array(z.tuple([z.string(), z.number().int(), z.number().int()]));

const weightEntrySchema = z.object({
  name: z.string(),
  shape: z.array(z.number().int().nonnegative()),
  dtype: z.string(),
  quantization: z.unknown().optional(),
});

export const modelJsonSchema = z.object({
  format: z.literal('layers-model'),
  modelTopology: z.object({
    model_config: z.object({
      class_name: z.enum(['Functional', 'Model']),
      config: z.object({
        name: z.string(),
        layers: z.array(layerSchema).min(1),
        input_layers: endpointSchema.length(1),
        output_layers: endpointSchema.length(1),
      }),
    }),
  }),
  weightsManifest: z.array(z.object({ paths: z.array(z.string()).min(1), weights: z.array(weightEntrySchema) })),
});

export interface KerasLayer {
  className: string;
  name: string;
  config: Readonly<Record<string, unknown>>;
  /** Names of the layers whose (single) output feeds this one, in order. */
  inputs: string[];
}

export interface WeightTensor {
  shape: number[];
  data: Float32Array;
}

export interface TfjsLayersModel {
  name: string;
  layers: KerasLayer[];
  inputLayer: string;
  outputLayer: string;
  /** Keyed by the manifest's weight name, e.g. `F_0/kernel`. */
  weights: Map<string, WeightTensor>;
}

export class TfjsModelFormatError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TfjsModelFormatError';
  }
}

function toLayers(config: z.infer<typeof modelJsonSchema>['modelTopology']['model_config']['config']): KerasLayer[] {
  return config.layers.map((layer) => {
    const name = layer.name ?? (typeof layer.config['name'] === 'string' ? layer.config['name'] : undefined);
    if (name === undefined) {
      throw new TfjsModelFormatError(`Expected a name for a ${layer.class_name} layer but received none`);
    }
    // A layer called more than once (shared weights) would need one ONNX subgraph per call.
    if (layer.inbound_nodes.length > 1) {
      throw new TfjsModelFormatError(
        `Expected layer ${name} to be called once but it is called ${layer.inbound_nodes.length} times`,
      );
    }
    const inputs = (layer.inbound_nodes[0] ?? []).map(([source, nodeIndex, tensorIndex]) => {
      if (nodeIndex !== 0 || tensorIndex !== 0) {
        throw new TfjsModelFormatError(
          `Expected layer ${name} to read output 0 of node 0 of ${source} but received node ${nodeIndex} output ${tensorIndex}`,
        );
      }
      return source;
    });
    return { className: layer.class_name, name, config: layer.config, inputs };
  });
}

/**
 * Splits the concatenated bytes of each weight group into named float32 tensors. The shards are
 * little-endian (TF.js writes them from a Float32Array on little-endian hosts); a DataView keeps
 * that true on any host.
 */
export function readWeights(
  manifest: z.infer<typeof modelJsonSchema>['weightsManifest'],
  groupBytes: readonly Uint8Array[],
): Map<string, WeightTensor> {
  const weights = new Map<string, WeightTensor>();
  manifest.forEach((group, groupIndex) => {
    const bytes = groupBytes[groupIndex];
    if (bytes === undefined)
      throw new TfjsModelFormatError(`Expected bytes for weight group ${groupIndex} but received none`);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let offset = 0;
    for (const entry of group.weights) {
      if (entry.dtype !== 'float32' || entry.quantization !== undefined) {
        throw new TfjsModelFormatError(
          `Expected unquantized float32 weights but ${entry.name} is ${entry.dtype}${entry.quantization === undefined ? '' : ' (quantized)'}`,
        );
      }
      const count = entry.shape.reduce((a, b) => a * b, 1);
      if (offset + count * 4 > bytes.byteLength) {
        throw new TfjsModelFormatError(
          `Expected weight group ${groupIndex} to hold ${entry.name} at byte ${offset} but it ends at byte ${bytes.byteLength}`,
        );
      }
      const data = new Float32Array(count);
      for (let i = 0; i < count; i += 1) data[i] = view.getFloat32(offset + i * 4, true);
      offset += count * 4;
      if (weights.has(entry.name))
        throw new TfjsModelFormatError(`Expected unique weight names but ${entry.name} repeats`);
      weights.set(entry.name, { shape: [...entry.shape], data });
    }
    if (offset !== bytes.byteLength) {
      throw new TfjsModelFormatError(
        `Expected weight group ${groupIndex} to be ${offset} bytes long but received ${bytes.byteLength}`,
      );
    }
  });
  return weights;
}

export function parseTfjsLayersModel(json: unknown, groupBytes: readonly Uint8Array[]): TfjsLayersModel {
  const parsed = modelJsonSchema.safeParse(json);
  if (!parsed.success) {
    throw new TfjsModelFormatError(`Expected a TF.js layers-model model.json but ${z.prettifyError(parsed.error)}`);
  }
  const { config } = parsed.data.modelTopology.model_config;
  const [inputLayer] = config.input_layers[0] as [string, number, number];
  const [outputLayer] = config.output_layers[0] as [string, number, number];
  return {
    name: config.name,
    layers: toLayers(config),
    inputLayer,
    outputLayer,
    weights: readWeights(parsed.data.weightsManifest, groupBytes),
  };
}

function shardPath(dir: string, relative: string): string {
  const resolved = path.resolve(dir, relative);
  if (path.dirname(resolved) !== path.resolve(dir)) {
    throw new TfjsModelFormatError(`Expected weight shard ${relative} to sit next to model.json in ${dir}`);
  }
  return resolved;
}

/** Reads model.json and its shards from disk (shard paths are relative to model.json). */
export async function loadTfjsLayersModel(modelJsonPath: string): Promise<TfjsLayersModel> {
  const dir = path.dirname(modelJsonPath);
  let json: unknown;
  try {
    json = JSON.parse(await readFile(modelJsonPath, 'utf8'));
  } catch (cause) {
    throw new TfjsModelFormatError(`Expected readable JSON at ${modelJsonPath} but reading it failed`, { cause });
  }
  const manifest = modelJsonSchema.shape.weightsManifest.safeParse(
    (json as { weightsManifest?: unknown } | null)?.weightsManifest,
  );
  const groups = manifest.success ? manifest.data : [];
  const groupBytes = await Promise.all(
    groups.map(async (group) => {
      const shards = await Promise.all(group.paths.map((p) => readFile(shardPath(dir, p))));
      return new Uint8Array(Buffer.concat(shards));
    }),
  );
  return parseTfjsLayersModel(json, groupBytes);
}
