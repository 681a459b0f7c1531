/**
 * Model manifests (`models/<name>.json`): what a model file is, how to verify it, how to feed it
 * and where it comes from. One schema, discriminated on `task`, so that lip-sync models can add
 * their own variant without touching the super-resolution one.
 */
import { z } from 'zod';

export const MANIFEST_SCHEMA_VERSION = 1;

const positiveInt = z.number().int().positive();

const range = z
  .tuple([z.number(), z.number()])
  .refine(([low, high]) => low < high, { message: 'Expected a range [low, high] with low < high' });

export const licenceSchema = z.object({
  /** SPDX identifier of the weights' licence. */
  spdx: z.string().min(1),
  holder: z.string().min(1),
  upstream: z.url(),
});

/** Where a missing file comes from. */
export const modelSourceSchema = z.discriminatedUnion('kind', [
  z.object({
    /** Converted on first use from an npm-installed TF.js layers model. */
    kind: z.literal('upscalerjs-tfjs'),
    package: z.string().min(1),
    version: z.string().min(1),
    /** model.json relative to the package root. */
    path: z.string().regex(/^[\w./-]+\/model\.json$/, 'Expected a relative path to a model.json'),
    /** The range the network was trained on; the converted graph always takes `input.range`. */
    nativeRange: range,
  }),
  z.object({
    /** Installed by the operator (weights that cannot ship with the project). */
    kind: z.literal('external'),
    instructions: z.string().min(1),
  }),
]);

export const imageTensorSchema = z.object({
  name: z.string().min(1),
  dtype: z.literal('float32'),
  layout: z.literal('NCHW'),
  channels: z.literal('RGB'),
  /** Values the tensor carries; the output is not clamped, consumers clamp. */
  range,
});

export const tileDefaultsSchema = z
  .object({
    /** Tile edge in input pixels. */
    size: positiveInt,
    /** Context added on each side of a tile, in input pixels. */
    overlap: z.number().int().nonnegative(),
    /** Tiles per inference call. */
    batch: positiveInt,
  })
  .refine((t) => t.overlap * 2 < t.size, { message: 'Expected tile overlap * 2 < tile size' });

// Split around `task` only so that formatted manifests read name, task, description first.
const headFields = {
  schemaVersion: z.literal(MANIFEST_SCHEMA_VERSION),
  name: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/, 'Expected a lower-case name of letters, digits, dots and dashes'),
};

const baseFields = {
  description: z.string().min(1),
  /** File name inside the models directory. */
  file: z.string().regex(/^[\w.-]+\.onnx$/, 'Expected a plain .onnx file name without directories'),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'Expected 64 lower-case hex digits'),
  bytes: positiveInt,
  format: z.literal('onnx'),
  opset: positiveInt,
  params: positiveInt,
  licence: licenceSchema,
  source: modelSourceSchema,
  converter: z.object({ name: z.string().min(1), version: z.string().min(1) }).optional(),
};

export const superResolutionManifestSchema = z.object({
  ...headFields,
  task: z.literal('super-resolution'),
  ...baseFields,
  /** Output edge over input edge. */
  scale: positiveInt,
  architecture: z.string().min(1),
  input: imageTensorSchema,
  output: imageTensorSchema,
  /**
   * Upper bound, in input pixels, on how far an output pixel's inputs reach: an overlap at least
   * this wide makes tiling exact; smaller overlaps trade exactness for speed.
   */
  receptiveFieldRadius: z.number().int().nonnegative(),
  tile: tileDefaultsSchema,
});

export const modelManifestSchema = z.discriminatedUnion('task', [superResolutionManifestSchema]);

export type ModelManifest = z.infer<typeof modelManifestSchema>;
export type SuperResolutionManifest = z.infer<typeof superResolutionManifestSchema>;
export type ModelSource = z.infer<typeof modelSourceSchema>;
export type TileDefaults = z.infer<typeof tileDefaultsSchema>;

export class ModelManifestError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelManifestError';
  }
}

/** `where` names the manifest in messages (usually its path). */
export function parseManifest(json: unknown, where: string): ModelManifest {
  const parsed = modelManifestSchema.safeParse(json);
  if (!parsed.success) {
    throw new ModelManifestError(`Expected a valid model manifest in ${where} but ${z.prettifyError(parsed.error)}`);
  }
  return parsed.data;
}

/** Stable JSON for committing: two-space indent, trailing newline. */
export function formatManifest(manifest: ModelManifest): string {
  return `${JSON.stringify(modelManifestSchema.parse(manifest), null, 2)}\n`;
}
