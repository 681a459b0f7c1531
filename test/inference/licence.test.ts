/** Whether a network's licence lets a paid service run it (inference/licence.ts), and every shipped manifest says so. */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allowsCommercialUse, maySell, noncommercialNotice, noncommercialReason } from '../../src/inference/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

describe('licences', () => {
  it('reads the recorded answer first, then the SPDX identifier where it is known', () => {
    expect(allowsCommercialUse({ spdx: 'MIT' })).toBe(true);
    expect(allowsCommercialUse({ spdx: 'CC-BY-NC-4.0' })).toBe(false);
    expect(allowsCommercialUse({ spdx: 'CC-BY-NC-SA-4.0' })).toBe(false);
    expect(allowsCommercialUse({ spdx: 'LicenseRef-Wav2Lip-research' })).toBe(false);
    expect(allowsCommercialUse({ spdx: 'LicenseRef-Custom' })).toBeUndefined();
    expect(allowsCommercialUse({ spdx: 'MIT', commercialUse: false })).toBe(false);
    expect(allowsCommercialUse(null)).toBeUndefined();
    expect([maySell({ spdx: 'Apache-2.0' }), maySell({ spdx: 'CC-BY-NC-4.0' }), maySell(null)]).toEqual([
      'yes',
      'no',
      'unknown',
    ]);
  });

  it('names the networks a paid service may not run, once each, and the setting that lets it', () => {
    const wav2lip = { name: 'wav2lip', licence: { spdx: 'LicenseRef-Wav2Lip-research', commercialUse: false } };
    const detector = { name: 'blazeface-front-128', licence: { spdx: 'Apache-2.0', commercialUse: true } };
    expect(noncommercialReason([detector])).toBeUndefined();
    expect(noncommercialReason([wav2lip, wav2lip, detector])).toBe(
      'the licence of wav2lip (LicenseRef-Wav2Lip-research) forbids commercial use; not served to paying jobs unless MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS=1',
    );
    expect(noncommercialNotice([wav2lip, detector])).toBe(
      'running wav2lip (LicenseRef-Wav2Lip-research) for your own use: its licence forbids commercial use',
    );
  });

  it('every shipped manifest records whether its licence allows commercial use', async () => {
    const dir = path.join(PACKAGE_ROOT, 'models');
    const names = (await readdir(dir)).filter((n) => n.endsWith('.json'));
    expect(names.length).toBeGreaterThan(10);
    for (const name of names) {
      const manifest = JSON.parse(await readFile(path.join(dir, name), 'utf8')) as {
        licence: { commercialUse?: unknown } | null;
      };
      expect(typeof manifest.licence?.commercialUse, name).toBe('boolean');
    }
  });
});
