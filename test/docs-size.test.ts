/**
 * Docs a reader can finish (issue 55, item 5): no page of docs/ (at any depth) is over 40,000
 * characters. A page that grows past it is split by what its reader came to do, with an index page
 * that links onward and keeps the old page's anchors (docs/benchmarks.md, docs/contract.md,
 * docs/operations.md and docs/protocol.md show the pattern).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/paths.js';
import { documents } from './helpers/documents.js';

const LIMIT = 40_000;

/** Characters as a reader counts them (code points), as the README's limit in test/docs.test.ts counts them. */
const lengthOf = (text: string): number => [...text].length;

describe('docs pages', () => {
  it(`are at most ${LIMIT.toLocaleString('en')} characters each`, async () => {
    const pages = (await documents()).filter((doc) => doc.startsWith('docs/'));
    expect(pages).toContain('docs/benchmarks.md');
    const over: string[] = [];
    for (const page of pages) {
      const length = lengthOf(await readFile(path.join(PACKAGE_ROOT, page), 'utf8'));
      if (length > LIMIT) over.push(`${page}: ${length} characters`);
    }
    expect(over).toEqual([]);
  });
});
