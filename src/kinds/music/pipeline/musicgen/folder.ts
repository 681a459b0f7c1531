/**
 * A MusicGen model folder (the Xenova layout plus our manifest): where it is, whether it is
 * complete, every file checked against the sha256 the install recorded (once per process), and
 * the numbers the decoding loop needs, read from config.json and generation_config.json. The
 * generated test folder and real weights go through this same code.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { sha256File } from '../../../../inference/index.js';
import { FOLDER_MANIFEST, REQUIRED_FILES, MUSICGEN_FILES } from './contract.js';
import { MUSICGEN_TEST_NAME, writeMusicgenTestFolder } from './test-model.js';

const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

export const folderManifestSchema = z.object({
  schemaVersion: z.literal(1),
  name: z.string().min(1),
  testModel: z.boolean().default(false),
  description: z.string().optional(),
  licence: z.object({
    spdx: z.string().min(1),
    holder: z.string().optional(),
    url: z.string().optional(),
    commercialUse: z.boolean().optional(),
  }),
  source: z.record(z.string(), z.unknown()).optional(),
  files: z.record(z.string(), z.object({ sha256, bytes: z.number().int().nonnegative() })),
});
export type FolderManifest = z.infer<typeof folderManifestSchema>;

const configSchema = z.object({
  decoder: z.object({
    num_codebooks: z.number().int().positive(),
    pad_token_id: z.number().int().nonnegative(),
    bos_token_id: z.number().int().nonnegative().optional(),
    vocab_size: z.number().int().positive(),
    num_hidden_layers: z.number().int().positive(),
    num_attention_heads: z.number().int().positive(),
    hidden_size: z.number().int().positive(),
  }),
  audio_encoder: z.object({
    sampling_rate: z.number().int().positive(),
    upsampling_ratios: z.array(z.number().int().positive()).min(1),
    audio_channels: z.number().int().positive().optional(),
  }),
});

const generationSchema = z.object({
  decoder_start_token_id: z.number().int().nonnegative().optional(),
  guidance_scale: z.number().positive().optional(),
  top_k: z.number().int().positive().optional(),
  max_length: z.number().int().positive().optional(),
});

/** What the loop needs, from the two config files. */
export interface MusicgenSpec {
  codebooks: number;
  padToken: number;
  startToken: number;
  vocab: number;
  layers: number;
  heads: number;
  headDim: number;
  sampleRate: number;
  channels: number;
  /** Audio samples per token frame (EnCodec's hop: 640 for 32 kHz at 50 Hz). */
  hop: number;
  guidanceScale: number;
  topK: number;
  /** Longest sequence the decoder was trained for, in frames (1500 = 30 s). */
  maxFrames: number;
}

export class MusicgenModelMissing extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MusicgenModelMissing';
  }
}

/** The model setting: a folder name under the model files directory, or a path. */
export function modelFolder(setting: string, filesDir: string): string {
  return path.isAbsolute(setting) || setting.includes('/') ? path.resolve(setting) : path.join(filesDir, setting);
}

/** Missing files (never generates anything): for readiness. */
export function missingFiles(dir: string): string[] {
  return [FOLDER_MANIFEST, ...REQUIRED_FILES].filter((f) => !existsSync(path.join(dir, f)));
}

/** The folder's recorded licence (media-worker-model.json), read without verifying the files. */
export async function folderLicence(dir: string): Promise<FolderManifest['licence']> {
  return folderManifestSchema.parse(await readJson(path.join(dir, FOLDER_MANIFEST))).licence;
}

async function readJson(file: string): Promise<unknown> {
  return JSON.parse(await readFile(file, 'utf8')) as unknown;
}

const verified = new Map<string, Promise<FolderManifest>>();

async function verifyFolder(dir: string): Promise<FolderManifest> {
  const manifest = folderManifestSchema.parse(await readJson(path.join(dir, FOLDER_MANIFEST)));
  for (const rel of REQUIRED_FILES) {
    if (manifest.files[rel] === undefined)
      throw new MusicgenModelMissing(`Expected ${FOLDER_MANIFEST} in ${dir} to list ${rel}`);
  }
  for (const [rel, entry] of Object.entries(manifest.files)) {
    const actual = await sha256File(path.join(dir, rel));
    if (actual !== entry.sha256) {
      throw new MusicgenModelMissing(
        `MusicGen file ${path.join(dir, rel)} has sha256 ${actual} but ${FOLDER_MANIFEST} expects ${entry.sha256}: reinstall it`,
      );
    }
  }
  return manifest;
}

/**
 * The verified folder: the test model is generated on first use; real weights must have been
 * installed (scripts/install-musicgen-model.ts), never fetched here.
 */
export async function ensureFolder(dir: string): Promise<FolderManifest> {
  if (path.basename(dir) === MUSICGEN_TEST_NAME && missingFiles(dir).length > 0) await writeMusicgenTestFolder(dir);
  const missing = missingFiles(dir);
  if (missing.length > 0) {
    throw new MusicgenModelMissing(
      `MusicGen weights are not installed: ${dir} lacks ${missing.join(', ')} (install them with scripts/install-musicgen-model.ts; docs/music.md)`,
    );
  }
  let pending = verified.get(dir);
  if (pending === undefined) {
    pending = verifyFolder(dir);
    verified.set(dir, pending);
    pending.catch(() => verified.delete(dir));
  }
  return pending;
}

export async function readSpec(dir: string): Promise<MusicgenSpec> {
  const config = configSchema.safeParse(await readJson(path.join(dir, MUSICGEN_FILES.config)));
  if (!config.success)
    throw new MusicgenModelMissing(
      `Expected MusicGen's config.json in ${dir} but ${config.error.issues[0]?.path.join('.')}: ${config.error.issues[0]?.message}`,
    );
  const gen = generationSchema.safeParse(await readJson(path.join(dir, MUSICGEN_FILES.generationConfig)));
  if (!gen.success)
    throw new MusicgenModelMissing(`Expected generation_config.json in ${dir} but ${gen.error.issues[0]?.message}`);
  const { decoder, audio_encoder: audio } = config.data;
  const hop = audio.upsampling_ratios.reduce((a, b) => a * b, 1);
  return {
    codebooks: decoder.num_codebooks,
    padToken: decoder.pad_token_id,
    startToken: gen.data.decoder_start_token_id ?? decoder.bos_token_id ?? decoder.pad_token_id,
    vocab: decoder.vocab_size,
    layers: decoder.num_hidden_layers,
    heads: decoder.num_attention_heads,
    headDim: decoder.hidden_size / decoder.num_attention_heads,
    sampleRate: audio.sampling_rate,
    channels: audio.audio_channels ?? 1,
    hop,
    guidanceScale: gen.data.guidance_scale ?? 3,
    topK: gen.data.top_k ?? 250,
    maxFrames: gen.data.max_length ?? 1500,
  };
}
