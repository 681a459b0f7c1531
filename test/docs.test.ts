import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { allSettingsReference, SETTINGS } from '../src/config.js';
import { WORKER_SETTINGS } from '../src/worker/settings.js';
import { PACKAGE_ROOT } from '../src/paths.js';
import { CONFIG_DOC, withConfigReference } from '../scripts/update-readme-config.js';
import { documents } from './helpers/documents.js';

describe('docs/configuration.md', () => {
  it('carries the settings reference generated from src/config.ts (npm run docs:config)', async () => {
    const doc = await readFile(path.join(PACKAGE_ROOT, CONFIG_DOC), 'utf8');
    expect(doc).toBe(withConfigReference(doc, allSettingsReference()));
    for (const s of [...Object.values(SETTINGS), ...Object.values(WORKER_SETTINGS)])
      expect(doc).toContain(`\`${s.env}\``);
  });
});

describe('README.md', () => {
  // Issue 47, item 2: what the project is, the two commands, the commands, the one-host service and
  // links; the settings reference and the architecture are in docs/ (links: test/docs-links.test.ts).
  it('stays a short front page that keeps the two commands of a fresh machine', async () => {
    const readme = await readFile(path.join(PACKAGE_ROOT, 'README.md'), 'utf8');
    expect([...readme].length).toBeLessThanOrEqual(15_000);
    expect(readme).toContain('npx media-worker upscale-image');
    expect(readme).toMatch(/^npm test\b/m);
    expect(readme).not.toContain('<!-- config-reference:start -->');
    for (const doc of [CONFIG_DOC, 'docs/architecture.md']) expect(readme).toContain(`](${doc})`);
  });
});

describe('docs/protocol.md and its pages (docs/protocol/)', () => {
  it('shows only progress stages the code sends', async () => {
    const pages = (await documents()).filter((doc) => doc === 'docs/protocol.md' || doc.startsWith('docs/protocol/'));
    expect(pages).toContain('docs/protocol/jobs.md');
    const doc = (await Promise.all(pages.map((page) => readFile(path.join(PACKAGE_ROOT, page), 'utf8')))).join('\n');
    const stages = [...doc.matchAll(/"stage": "([^"]+)"/g)].map((m) => m[1]);
    expect(stages.length).toBeGreaterThan(0);
    const sources = await Promise.all(
      [
        'src/app/run-job.ts',
        'src/kinds/image-upscale/runtime.ts',
        'src/kinds/video-upscale/runtime.ts',
        'src/kinds/lipsync/pipeline/pipeline.ts',
      ].map((f) => readFile(path.join(PACKAGE_ROOT, f), 'utf8')),
    );
    for (const stage of stages)
      expect(sources.some((text) => text.includes(`stage: '${stage}'`) || text.includes(`'${stage}'`))).toBe(true);
  });
});
