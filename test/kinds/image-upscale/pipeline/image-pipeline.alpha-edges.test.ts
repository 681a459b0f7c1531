/**
 * Hard alpha edges through the real image pipeline (issue 40): the colour stored under fully
 * transparent pixels does not reach the picture, for RGBA (black and white under), palette + tRNS,
 * grey + alpha and WebP, each measured against the same file with the fill off (the stored colour
 * reaching the network as before), so that every case shows the rim it prevents. Opaque images come
 * out byte for byte as with the fill off. The compact network: the test is about the fill; the
 * default network's figures are bench/fidelity/fidelity-alpha-edges.ts's (docs/benchmarks.md, "Fidelity").
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp, { type Sharp } from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { edgeError, type HardEdgeCase, makeHardEdgeCases } from '../../../../bench/fidelity/fidelity-corpus-alpha.js';
import { SessionCache, createSrModelLoader } from '../../../../src/inference/index.js';
import { probeImage } from '../../../../src/media/index.js';
import { upscaleImageFile } from '../../../../src/kinds/image-upscale/pipeline/image-pipeline.js';
import { BUNDLED_PHOTOS_DIR } from '../../../../src/paths.js';

const FAST = 'realesrgan-x4fast';
/** The goal, 8-bit levels of visible error on the edge pixels. */
const GOAL = { mean: 8, max: 40 };

const sessions = new SessionCache({ executionProviders: ['cpu'] });
const loadModel = createSrModelLoader({ sessions });
let dir: string;
let cases: HardEdgeCase[];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-alpha-edges-'));
  cases = await makeHardEdgeCases(dir, 80, 48);
});

afterAll(async () => {
  await sessions.release();
  await rm(dir, { recursive: true, force: true });
});

async function upscale(file: string, transparentFill: boolean, factor: '1' | '2' | '4' = '2'): Promise<string> {
  const output = path.join(dir, `out-${transparentFill ? 'fill' : 'stored'}-${factor}-${path.basename(file)}`);
  await upscaleImageFile(
    { inputPath: file, outputPath: output, factor, info: await probeImage(file), modelName: FAST, transparentFill },
    loadModel,
  );
  return output;
}

describe('hard alpha edges', () => {
  it.each([
    'png-disc-black-under',
    'png-disc-white-under',
    'png16-disc-black-under',
    'png-palette-trns-disc',
    'png-grey-alpha-disc',
    'webp-alpha-disc',
  ])(
    '%s: no rim of the colour under the transparency',
    async (name) => {
      const c = cases.find((k) => k.name === name)!;
      const meta = await sharp(c.file).metadata();
      expect(meta.hasAlpha).toBe(true);
      const filled = await edgeError(await upscale(c.file, true), c.colour);
      const stored = await edgeError(await upscale(c.file, false), c.colour);
      expect(filled.pixels).toBeGreaterThan(100);
      // Without the fill, the rim is there (the bug this guards against)...
      expect(
        stored.mean > GOAL.mean || stored.max > GOAL.max,
        `fill off: mean ${stored.mean.toFixed(1)} max ${stored.max.toFixed(0)}`,
      ).toBe(true);
      // ...with it, the edge shows the disc's colour.
      expect(filled.mean, `mean ${filled.mean.toFixed(1)}`).toBeLessThanOrEqual(GOAL.mean);
      expect(filled.max, `max ${filled.max.toFixed(0)}`).toBeLessThanOrEqual(GOAL.max);
    },
    60_000,
  );

  it('keeps what each case was: grey + alpha, 16-bit RGBA, WebP', async () => {
    const meta = async (name: string) =>
      sharp(await upscale(cases.find((k) => k.name === name)!.file, true)).metadata();
    expect((await meta('png-grey-alpha-disc')).channels).toBe(2);
    expect(await meta('png16-disc-black-under')).toMatchObject({ channels: 4, depth: 'ushort' });
    expect(await meta('webp-alpha-disc')).toMatchObject({ format: 'webp', hasAlpha: true });
  }, 60_000);
});

describe('opaque images', () => {
  it.each([
    ['RGB PNG', (s: Sharp) => s.removeAlpha().png(), 'png'],
    ['opaque RGBA PNG', (s: Sharp) => s.removeAlpha().ensureAlpha(1).png(), 'png'],
    ['16-bit opaque RGBA PNG', (s: Sharp) => s.removeAlpha().ensureAlpha(1).toColourspace('rgb16').png(), 'png'],
    ['JPEG', (s: Sharp) => s.jpeg({ quality: 90 }), 'jpg'],
    ['faint but nowhere transparent RGBA PNG', (s: Sharp) => s.removeAlpha().ensureAlpha(0.02).png(), 'png'],
  ] as const)(
    '%s: byte for byte what the pipeline wrote before the fill',
    async (name, encode, ext) => {
      const file = path.join(dir, `${name.replaceAll(' ', '-')}.${ext}`);
      await encode(sharp(path.join(BUNDLED_PHOTOS_DIR, 'coffee.png')).resize(48, 32)).toFile(file);
      const filled = await readFile(await upscale(file, true));
      const stored = await readFile(await upscale(file, false));
      expect(filled.equals(stored)).toBe(true);
    },
    60_000,
  );
});
