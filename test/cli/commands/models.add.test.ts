/**
 * `media-worker models add` through the built command line (dist/), in a temporary
 * MEDIA_WORKER_MODELS_DIR: a copy of the shipped compact Real-ESRGAN graph adopted under another name
 * upscales byte for byte as the original, by --model and by MEDIA_WORKER_SR_MODELS; a file of random
 * bytes is refused in one line and nothing is written.
 */
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureModelFile, parseManifest } from '../../../src/inference/index.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../../../src/paths.js';
import { seededRandom } from '../../../src/seeded-random.js';
import { runCli, type CliRun } from '../../helpers/cli.js';

function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return runCli(args, { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, timeoutMs: 300_000 });
}

let dir: string;
let modelsDir: string;
let photo: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'models-add-'));
  modelsDir = path.join(dir, 'models');
  photo = path.join(dir, 'fur.png');
  await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png'))
    .extract({ left: 100, top: 50, width: 72, height: 56 })
    .png()
    .toFile(photo);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('models add', () => {
  it('adopts a copy of the compact Real-ESRGAN graph, which then upscales exactly as the original', async () => {
    const copy = path.join(dir, 'my-x4.onnx');
    // The shipped file as the registry has it (converted on first use where models prepare has not run).
    await copyFile((await ensureModelFile('realesrgan-x4fast')).path, copy);
    const env = { MEDIA_WORKER_MODELS_DIR: modelsDir };
    const added = await cli(['models', 'add', copy, '--name', 'my-x4', '--threads', '2'], env);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^adopted my-x4: x4, input range \[0, 255\], 1209024 multiply-adds per input pixel/);
    expect(added.stderr).toMatch(/tiling: .* largest difference [01] \(8-bit\)/);

    const shipped = parseManifest(
      JSON.parse(await readFile(path.join(PACKAGE_ROOT, 'models', 'realesrgan-x4fast.json'), 'utf8')),
      'shipped',
    );
    const adopted = parseManifest(JSON.parse(await readFile(path.join(modelsDir, 'my-x4.json'), 'utf8')), 'adopted');
    if (adopted.task !== 'super-resolution' || shipped.task !== 'super-resolution')
      throw new Error('Expected super-resolution manifests');
    expect(adopted).toMatchObject({
      scale: 4,
      sha256: shipped.sha256,
      bytes: shipped.bytes,
      macsPerInputPixel: shipped.macsPerInputPixel,
      licence: null,
    });
    expect(adopted.input.range).toEqual(shipped.input.range);
    expect(adopted.source).toMatchObject({ kind: 'adopted', from: copy, url: null });
    // The receptive field the shipped manifest bounds from the architecture; the probe measures it.
    expect(adopted.receptiveFieldRadius).toBeLessThanOrEqual(shipped.receptiveFieldRadius);
    expect(adopted.tile.bytesPerPixel).toBeGreaterThan(0);

    const listed = await cli(['models', 'list'], env);
    expect(listed.stdout).toContain(
      `my-x4.onnx                   present; licence and source.url not filled in (${path.join(modelsDir, 'my-x4.json')})`,
    );

    const original = path.join(dir, 'original.png');
    const byName = path.join(dir, 'by-name.png');
    const bySetting = path.join(dir, 'by-setting.png');
    for (const [args, runEnv] of [
      [['--model', 'realesrgan-x4fast', '-o', original], {}],
      [['--model', 'my-x4', '-o', byName], env],
      // Every use, as this registry holds no other network (the estimate looks at the video default too).
      [['-o', bySetting], { ...env, MEDIA_WORKER_SR_MODELS: 'image=my-x4,video=my-x4,mouth=my-x4' }],
    ] as const) {
      const run = await cli(['upscale-image', photo, '--factor', '4', ...args], runEnv);
      expect(run.code, run.stderr).toBe(0);
    }
    const bytes = await readFile(original);
    expect((await sharp(original).metadata()).width).toBe(72 * 4);
    expect(Buffer.compare(await readFile(byName), bytes)).toBe(0);
    expect(Buffer.compare(await readFile(bySetting), bytes)).toBe(0);
  }, 300_000);

  it('refuses a file of random bytes in one line and writes nothing', async () => {
    const random = seededRandom(41);
    const junk = path.join(dir, 'junk.onnx');
    await writeFile(
      junk,
      Uint8Array.from({ length: 65_536 }, () => Math.floor(random() * 256)),
    );
    const emptyDir = path.join(dir, 'empty-models');
    const run = await cli(['models', 'add', junk, '--name', 'junk'], { MEDIA_WORKER_MODELS_DIR: emptyDir });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(
      new RegExp(
        `^media-worker: cannot adopt ${junk.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: not an ONNX model: .*; nothing written\\n$`,
      ),
    );
    await expect(readdir(emptyDir)).rejects.toThrow(/ENOENT/);
  }, 60_000);
});
