/**
 * A models directory of a test's own (MEDIA_WORKER_MODELS_DIR), for the tests that need a network
 * the package does not ship: the shipped manifests copied (the test adds its own beside them), the
 * networks linked rather than copied.
 */
import { copyFile, mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths.js';

const SHIPPED = path.join(PACKAGE_ROOT, 'models');

/**
 * The shipped models in `dir` (made if missing), and `wav2lip-nc`: the Wav2Lip test network
 * recorded with Wav2Lip's research-only licence, which forbids commercial use. Returns `dir`.
 */
export async function modelsWithNonCommercialWav2Lip(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const name of await readdir(SHIPPED)) {
    if (name.endsWith('.json')) await copyFile(path.join(SHIPPED, name), path.join(dir, name));
    else if (name.endsWith('.onnx')) await symlink(path.join(SHIPPED, name), path.join(dir, name));
  }
  const test = JSON.parse(await readFile(path.join(SHIPPED, 'wav2lip-test.json'), 'utf8')) as object;
  const nc = {
    ...test,
    name: 'wav2lip-nc',
    licence: {
      spdx: 'LicenseRef-Wav2Lip-research',
      holder: 'Wav2Lip authors',
      upstream: 'https://github.com/Rudrabha/Wav2Lip',
      commercialUse: false,
    },
  };
  await writeFile(path.join(dir, 'wav2lip-nc.json'), `${JSON.stringify(nc, null, 2)}\n`);
  return dir;
}
