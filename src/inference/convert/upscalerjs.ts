/**
 * The UpscalerJS ESRGAN packages this project converts: where they live in node_modules and what
 * each network expects. The numbers come from the packages' own model definitions
 * (`getModelDefinition.js`: architecture and `inputRange`).
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { z } from 'zod';

export const UPSCALERJS_VARIANTS = {
  slim: { package: '@upscalerjs/esrgan-slim', architecture: 'RDN C1 D2 G4 G0 64', nativeRange: [0, 255] },
  medium: { package: '@upscalerjs/esrgan-medium', architecture: 'RDN C1 D10 G64 G0 64', nativeRange: [0, 255] },
  thick: { package: '@upscalerjs/esrgan-thick', architecture: 'RRDN C4 D3 G32 G0 64 T10', nativeRange: [0, 1] },
} as const satisfies Record<string, { package: string; architecture: string; nativeRange: readonly [number, number] }>;

export type UpscalerVariant = keyof typeof UPSCALERJS_VARIANTS;
export const UPSCALERJS_SCALES = [2, 3, 4, 8] as const;
export type UpscalerScale = (typeof UPSCALERJS_SCALES)[number];

export const UPSCALERJS_LICENCE = {
  spdx: 'MIT',
  holder: 'Kevin Scott',
  upstream: 'https://github.com/thekevinscott/upscaler',
  commercialUse: true,
} as const;

/** Everything a conversion depends on besides the converter itself. */
export interface TfjsSource {
  package: string;
  version: string;
  /** model.json, relative to the package root. */
  path: string;
  /** The range the network was trained on; the converted graph always takes 0-255. */
  nativeRange: readonly [number, number];
}

export class ModelSourceError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModelSourceError';
  }
}

const packageJsonSchema = z.object({ name: z.string(), version: z.string() });

export function modelName(variant: UpscalerVariant, scale: UpscalerScale): string {
  return `esrgan-${variant}-x${scale}`;
}

export function parseModelName(name: string): { variant: UpscalerVariant; scale: UpscalerScale } | undefined {
  const match = /^esrgan-(slim|medium|thick)-x(\d)$/.exec(name);
  const scale = Number(match?.[2]);
  if (match === null || !(UPSCALERJS_SCALES as readonly number[]).includes(scale)) return undefined;
  return { variant: match[1] as UpscalerVariant, scale: scale as UpscalerScale };
}

/**
 * Finds an installed package's root directory. The packages' `exports` hide package.json, so this
 * resolves the main entry and walks up to the directory whose package.json carries the name.
 */
export async function packageRoot(
  packageName: string,
  from: string = import.meta.url,
): Promise<{ root: string; version: string }> {
  let entry: string;
  try {
    entry = createRequire(from).resolve(packageName);
  } catch (cause) {
    throw new ModelSourceError(`Expected npm package ${packageName} to be installed but it cannot be resolved`, {
      cause,
    });
  }
  for (let dir = path.dirname(entry); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const raw = await readFile(path.join(dir, 'package.json'), 'utf8').catch(() => undefined);
    if (raw === undefined) continue;
    const parsed = packageJsonSchema.safeParse(JSON.parse(raw));
    if (parsed.success && parsed.data.name === packageName) return { root: dir, version: parsed.data.version };
  }
  throw new ModelSourceError(`Expected a package.json named ${packageName} above ${entry} but found none`);
}

/** The source of one model as installed now (version read from node_modules). */
export async function installedSource(variant: UpscalerVariant, scale: UpscalerScale): Promise<TfjsSource> {
  const spec = UPSCALERJS_VARIANTS[variant];
  const { version } = await packageRoot(spec.package);
  return { package: spec.package, version, path: `models/x${scale}/model.json`, nativeRange: spec.nativeRange };
}
