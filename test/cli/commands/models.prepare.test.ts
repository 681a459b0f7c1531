/**
 * `media-worker models prepare` makes a generated network with the generator its kind hands the
 * registry (KindRuntime.modelGenerators): the built command line (dist/) writes the lip-sync test
 * network into an empty MEDIA_WORKER_MODEL_FILES_DIR, with the committed manifest's checksum.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sha256File } from '../../../src/inference/index.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const run = promisify(execFile);

let filesDir: string;
beforeAll(async () => {
  filesDir = await mkdtemp(path.join(tmpdir(), 'models-prepare-'));
});
afterAll(async () => {
  await rm(filesDir, { recursive: true, force: true });
});

it("prepares the generated wav2lip-test network from its kind's generator", async () => {
  const { stdout } = await run(process.execPath, [CLI, 'models', 'prepare', 'wav2lip-test'], {
    cwd: PACKAGE_ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', MEDIA_WORKER_MODEL_FILES_DIR: filesDir },
    timeout: 120_000,
  });
  const file = path.join(filesDir, 'wav2lip-test.onnx');
  expect(stdout).toBe(`wav2lip-test: ok ${file}\n`);
  expect(await readdir(filesDir)).toEqual(['wav2lip-test.onnx']);
  const manifest = JSON.parse(await readFile(path.join(PACKAGE_ROOT, 'models', 'wav2lip-test.json'), 'utf8')) as {
    sha256: string;
  };
  expect(await sha256File(file)).toBe(manifest.sha256);
});
