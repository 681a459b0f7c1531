import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allSettingsReference, SETTINGS } from '../src/config.js';
import { WORKER_SETTINGS } from '../src/worker/settings.js';
import { PACKAGE_ROOT } from '../src/paths.js';
import { withConfigReference } from '../scripts/update-readme-config.js';

describe('README', () => {
  it('carries the configuration table generated from src/config.ts (npm run docs:config)', async () => {
    const readme = await readFile(path.join(PACKAGE_ROOT, 'README.md'), 'utf8');
    expect(readme).toBe(withConfigReference(readme, allSettingsReference()));
    for (const s of [...Object.values(SETTINGS), ...Object.values(WORKER_SETTINGS)]) expect(readme).toContain(`\`${s.env}\``);
  });
});

describe('docs/protocol.md', () => {
  it('shows only progress stages the code sends', async () => {
    const doc = await readFile(path.join(PACKAGE_ROOT, 'docs', 'protocol.md'), 'utf8');
    const stages = [...doc.matchAll(/"stage": "([^"]+)"/g)].map((m) => m[1]);
    expect(stages.length).toBeGreaterThan(0);
    const sources = await Promise.all(['src/app/run-job.ts', 'src/app/kinds/image-upscale.ts', 'src/app/kinds/video-upscale.ts', 'src/lipsync/pipeline.ts'].map((f) => readFile(path.join(PACKAGE_ROOT, f), 'utf8')));
    for (const stage of stages) expect(sources.some((text) => text.includes(`stage: '${stage}'`) || text.includes(`'${stage}'`))).toBe(true);
  });
});
