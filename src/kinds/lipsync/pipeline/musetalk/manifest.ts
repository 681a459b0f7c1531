/**
 * The manifest of a set of MuseTalk graphs (`<models>/musetalk/<name>.json`): each graph's file,
 * sha256, size and parameters, the licence of every part, and whether a paying service may run
 * it. A folder of its own beside the registry's manifests (models/*.json, one graph each), since
 * one MuseTalk network is five graphs. zod at the boundary: a manifest that does not parse is
 * refused with the field named.
 */
import { z } from 'zod';
import { MUSETALK_GRAPHS, type MuseTalkGraph } from './graph-contract.js';
import { MUSETALK_PRECISIONS, MUSETALK_VAE_MAX_LEVELS } from './test-networks.js';

export const MUSETALK_MANIFEST_VERSION = 1;
export const MUSETALK_MANIFEST_DIR = 'musetalk';

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'Expected 64 lower-case hex digits');
/** A plain file name inside the network's folder: no path separators, no dot-dot. */
const fileName = z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'Expected a plain file name');

const graphFileSchema = z.object({
  file: fileName,
  sha256: sha256Hex,
  bytes: z.number().int().positive(),
  /** Weights kept outside the graph (ONNX external data), as an export over 2 GB must. */
  externalData: z.object({ file: fileName, sha256: sha256Hex, bytes: z.number().int().positive() }).optional(),
});

const positiveInt = z.number().int().positive();
const generatorOptionsSchema = z.object({
  size: z
    .object({
      channels: z.array(positiveInt).min(1).max(5),
      blocks: positiveInt,
      attentionLevels: z.number().int().nonnegative(),
      heads: positiveInt,
      vae: z.object({ channels: z.array(positiveInt).min(1).max(MUSETALK_VAE_MAX_LEVELS), blocks: positiveInt }),
      whisper: z.object({ width: positiveInt, heads: positiveInt, mlp: positiveInt }),
    })
    .optional(),
  precision: z.enum(MUSETALK_PRECISIONS).optional(),
  externalDataAbove: z.number().int().nonnegative().optional(),
});

export const componentLicenceSchema = z.object({
  /** What it covers: the code, or a set of weights. */
  part: z.string().min(1),
  spdx: z.string().min(1),
  holder: z.string().min(1),
  upstream: z.url(),
  /** The licence's words on use, quoted or summarised, where SPDX does not say it all. */
  terms: z.string().min(1).optional(),
});

export const museTalkManifestSchema = z.object({
  schemaVersion: z.literal(MUSETALK_MANIFEST_VERSION),
  name: z.string().regex(/^[a-z0-9][a-z0-9.-]*$/),
  task: z.literal('lipsync-musetalk'),
  description: z.string().min(1),
  testModel: z.boolean(),
  licences: z.array(componentLicenceSchema).min(1),
  /** Whether every part's licence lets a paying service run it, and why. */
  commercialUse: z.object({ allowed: z.boolean(), reason: z.string().min(1) }),
  source: z.discriminatedUnion('kind', [
    z.object({
      kind: z.literal('generated'),
      generator: z.string().min(1),
      generatorVersion: z.string().min(1),
      /** The generator's options where they are not its defaults: a sized build for timing (test-networks.ts). */
      options: generatorOptionsSchema.optional(),
    }),
    z.object({ kind: z.literal('installed'), instructions: z.string().min(1) }),
  ]),
  graphs: z.object(
    Object.fromEntries(MUSETALK_GRAPHS.map((g) => [g, graphFileSchema])) as Record<
      MuseTalkGraph,
      typeof graphFileSchema
    >,
  ),
  /** Frames per UNet call unless a setting says otherwise (the reference's default). */
  batch: z.number().int().positive(),
});

export type MuseTalkManifest = z.infer<typeof museTalkManifestSchema>;
export type MuseTalkGraphFile = z.infer<typeof graphFileSchema>;

export class MuseTalkManifestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MuseTalkManifestError';
  }
}

export function parseMuseTalkManifest(json: unknown, where: string): MuseTalkManifest {
  const parsed = museTalkManifestSchema.safeParse(json);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new MuseTalkManifestError(`Expected ${where} to be a MuseTalk manifest but ${issues}`);
  }
  return parsed.data;
}

export function formatMuseTalkManifest(manifest: MuseTalkManifest): string {
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/**
 * The parts of a real MuseTalk 1.5 export and their licences. The reference's other helpers
 * (BiSeNet face parser, DWPose, S3FD) are not used here.
 */
export const MUSETALK_LICENCES: readonly z.infer<typeof componentLicenceSchema>[] = Object.freeze([
  {
    part: 'MuseTalk code and UNet weights (musetalkV15/unet.pth)',
    spdx: 'MIT',
    holder: 'TMElyralab (Tencent Music Entertainment Lyra Lab)',
    upstream: 'https://github.com/TMElyralab/MuseTalk',
    terms:
      'README "Disclaimer/License": code MIT, no limitation for academic and commercial usage; "The trained model are available for any purpose, even commercially."',
  },
  {
    part: 'VAE weights (stabilityai/sd-vae-ft-mse)',
    spdx: 'MIT',
    holder: 'Stability AI',
    upstream: 'https://huggingface.co/stabilityai/sd-vae-ft-mse',
  },
  {
    part: 'Whisper tiny encoder weights (openai/whisper-tiny)',
    spdx: 'MIT',
    holder: 'OpenAI',
    upstream: 'https://github.com/openai/whisper',
    terms:
      'Code and weights released under the MIT licence in openai/whisper; the Hugging Face copy is marked Apache-2.0, which allows commercial use too.',
  },
]);

export const MUSETALK_COMMERCIAL_USE = Object.freeze({
  allowed: true,
  reason:
    'Every part (MuseTalk code and UNet, sd-vae-ft-mse, Whisper tiny) allows commercial use; no face parser, DWPose or S3FD is used.',
});
