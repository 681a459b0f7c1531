/**
 * The documents hold together (issue 47, item 2): every relative link and `#anchor` in README.md and
 * docs/*.md resolves, and no document shows a path that only exists on the machine it was written on.
 *
 * Links: every `[text](target)`, `![alt](target)`, `[id]: target` and HTML `href`/`src` outside code
 * (fenced blocks and inline code are not links). A target with a scheme (`https:`, `mailto:`) is not
 * checked. Any other target is a path relative to the document; it must name a file or folder of
 * this repository (a link out of the repository resolves on no clone and on no forge), and an
 * `#anchor` on a Markdown file (or alone: the document itself) must be the slug of one of its
 * headings, computed as GitHub does: the heading's text as rendered (inline code, links and emphasis
 * reduced to their text), lower-cased, every character that is not a letter, a digit, a mark, `_`,
 * `-` or a space dropped, spaces turned into `-`, and a repeated slug numbered `-1`, `-2`, ...;
 * an `<a id>`/`<a name>` counts as an anchor too.
 *
 * Absolute paths, the rule: a document may name an absolute path only when it means the same on
 * every host: a system location (`/usr/sbin/nats-server`, `/usr/share/doc/...`, `/etc/...`, `/proc/...`,
 * `/dev/...`), the deployment's own (`/var/lib/media-worker/...`, `/opt/media-worker`), or a fixed
 * scratch name under `/tmp` in a command the reader runs. Refused are the places that exist only
 * where a document was written: home directories (`/home/`, `/root/`, `/Users/`, `C:\Users\`),
 * checkouts and CI workspaces (`/work/`, `/workspace/`, `/builds/`, `/github/`, `/runner/`, `/mnt/`),
 * and per-process temporary folders (macOS `/var/folders/`, `/private/`, mktemp's `/tmp/tmp.XXXX`).
 * Code blocks are checked too: a pasted session's output is where such paths come from.
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../src/paths.js';
import { documents } from './helpers/documents.js';

/** README.md and docs/*.md, as repository paths. */
/** The lines of `text` outside fenced code blocks, with their line numbers (1-based). */
function proseLines(text: string): { line: string; number: number }[] {
  const out: { line: string; number: number }[] = [];
  let fence: string | undefined;
  for (const [i, line] of text.split('\n').entries()) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined && (fence === undefined || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence === undefined ? marker : undefined;
      continue;
    }
    if (fence === undefined) out.push({ line, number: i + 1 });
  }
  return out;
}

/** A line without its inline code spans (each replaced by its text, which is never a link). */
function withoutCode(line: string): string {
  return line.replace(/(`+)(.+?)\1/g, (_, _ticks: string, code: string) => code.replace(/[[\]()<>]/g, ' '));
}

/** The text a heading renders as: inline code, links, images, emphasis and HTML reduced to their text. */
function renderedText(heading: string): string {
  return heading
    .replace(/(`+)(.+?)\1/g, '$2')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/\*+/g, '');
}

/** GitHub's slug of a heading (github-slugger): see the comment at the top. */
function slugOf(heading: string): string {
  return renderedText(heading)
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a Markdown document offers: its headings' slugs (repeats numbered) and `<a id>`s. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = slugOf(heading);
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const m of line.matchAll(/<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

/** The link targets of a document outside code, with their line numbers. */
function linksOf(text: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  for (const { line, number } of proseLines(text)) {
    const prose = withoutCode(line);
    for (const m of prose.matchAll(/\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+"[^"]*")?\s*\)/g))
      links.push({ target: m[1]!.replace(/^<|>$/g, ''), line: number });
    const definition = /^ {0,3}\[[^\]]+\]:\s*(\S+)/.exec(prose);
    if (definition) links.push({ target: definition[1]!, line: number });
    for (const m of prose.matchAll(/\b(?:href|src)="([^"]+)"/g)) links.push({ target: m[1]!, line: number });
  }
  return links;
}

const isExternal = (target: string) => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

/** How the check sees the repository: a document's text, and whether a path exists. */
interface Repository {
  read(file: string): Promise<string>;
  exists(file: string): Promise<boolean>;
}

const REPOSITORY: Repository = {
  read: (file) => readFile(path.join(PACKAGE_ROOT, file), 'utf8'),
  exists: (file) =>
    stat(path.join(PACKAGE_ROOT, file)).then(
      () => true,
      () => false,
    ),
};

/** What is wrong with each relative link of the documents, as `file:line: target (why)`. */
async function brokenLinks(docs: string[], repository: Repository = REPOSITORY): Promise<string[]> {
  const anchors = new Map<string, Promise<Set<string>>>();
  const anchorsIn = (file: string) => {
    let found = anchors.get(file);
    if (found === undefined) {
      found = repository.read(file).then(anchorsOf);
      anchors.set(file, found);
    }
    return found;
  };
  const broken: string[] = [];
  for (const doc of docs) {
    for (const { target, line } of linksOf(await repository.read(doc))) {
      if (isExternal(target)) continue;
      const hash = target.indexOf('#');
      const filePart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash)).replace(/[?].*$/, '');
      const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const where = `${doc}:${line}: ${target}`;
      const resolved =
        filePart === ''
          ? doc
          : path.posix.normalize(path.posix.join(path.posix.dirname(doc), filePart)).replace(/\/$/, '');
      if (resolved === '..' || resolved.startsWith('../') || path.posix.isAbsolute(filePart))
        broken.push(`${where} (leaves the repository)`);
      else if (!(await repository.exists(resolved))) broken.push(`${where} (no such file)`);
      else if (anchor !== undefined && resolved.endsWith('.md') && !(await anchorsIn(resolved)).has(anchor)) {
        broken.push(`${where} (no heading with that anchor in ${resolved})`);
      }
    }
  }
  return broken;
}

/** The machine-bound paths of the rule at the top. */
const MACHINE_PATH = new RegExp(
  String.raw`(?<![\w.~:/-])(?:/(?:home|root|Users|work|workspace|builds|github|runner|mnt|private|var/folders)/|/tmp/tmp\.)[^\s)\]` +
    '`' +
    String.raw`'"]*|\b[A-Z]:\\Users\\\S*`,
  'g',
);

function machinePathsOf(text: string): { path: string; line: number }[] {
  return text
    .split('\n')
    .flatMap((line, i) => [...line.matchAll(MACHINE_PATH)].map((m) => ({ path: m[0], line: i + 1 })));
}

describe('links in README.md and docs/*.md', () => {
  it('every relative link names a file of the repository, and every #anchor a heading of it', async () => {
    const docs = await documents();
    expect(docs.length).toBeGreaterThan(5);
    expect(await brokenLinks(docs)).toEqual([]);
  });

  it('computes anchors as GitHub does', () => {
    const text = [
      '# media-worker',
      "## A job's path",
      '### Daemon (`media-worker serve`)',
      "### Gateway (`media-worker gateway`; also reads the protocol's NATS_*, stream names)",
      '## Retrying safely (`Idempotency-Key`)',
      '## Work limits and the cost estimate',
      '## Notes',
      '## Notes',
      "## The [gateway](x.md)'s **HTTP** API",
      '```',
      '# not a heading',
      '```',
      '<a id="custom"></a>',
    ].join('\n');
    expect([...anchorsOf(text)]).toEqual([
      'media-worker',
      'a-jobs-path',
      'daemon-media-worker-serve',
      'gateway-media-worker-gateway-also-reads-the-protocols-nats_-stream-names',
      'retrying-safely-idempotency-key',
      'work-limits-and-the-cost-estimate',
      'notes',
      'notes-1',
      'the-gateways-http-api',
      'custom',
    ]);
  });

  it('finds links in prose only, and would notice a broken one', async () => {
    const text =
      'See [a](docs/a.md#x) and `[b](not-a-link.md)`.\n```\n[c](in-code.md)\n```\n[d]: ../outside.md\n<img src="docs/p.png">';
    expect(linksOf(text).map((l) => l.target)).toEqual(['docs/a.md#x', '../outside.md', 'docs/p.png']);
    const files: Record<string, string> = {
      'README.md':
        '# Top\n[ok](docs/a.md#the-part) [here](#top) [dir](docs/) [gone](docs/b.md) [anchor](docs/a.md#nothing) [out](../spec.md)',
      'docs/a.md': '# A\n## The part\n[back](../README.md#top) [up](../README.md#bottom)',
    };
    const fake: Repository = {
      read: async (file) => files[file] ?? '',
      exists: async (file) => file in files || file === 'docs',
    };
    expect(await brokenLinks(['README.md', 'docs/a.md'], fake)).toEqual([
      'README.md:2: docs/b.md (no such file)',
      'README.md:2: docs/a.md#nothing (no heading with that anchor in docs/a.md)',
      'README.md:2: ../spec.md (leaves the repository)',
      'docs/a.md:3: ../README.md#bottom (no heading with that anchor in README.md)',
    ]);
  });
});

describe('absolute paths in README.md and docs/*.md', () => {
  it('name no place that exists only on the machine a document was written on', async () => {
    const found: string[] = [];
    for (const doc of await documents()) {
      for (const { path: p, line } of machinePathsOf(await readFile(path.join(PACKAGE_ROOT, doc), 'utf8')))
        found.push(`${doc}:${line}: ${p}`);
    }
    expect(found).toEqual([]);
  });

  it("tells a developer's path from a documented system path", () => {
    const text = [
      'wrote /work/wt/bench/models/my-x4.onnx',
      'cd /home/alice/media-worker && npm test',
      '(default `/usr/sbin/nats-server`), /usr/share/doc/opencv-doc/examples/data/, /etc/media-worker/media-worker.env',
      'https://example.com/work/x and `http://127.0.0.1:8080/results/`',
      'cp models/x.onnx /tmp/my-x4.onnx; ls /tmp/tmp.Zx81Qa/out',
      'MEDIA_WORKER_MODELS_DIR=/var/lib/media-worker/models; ~/.cache/nats',
    ].join('\n');
    expect(machinePathsOf(text)).toEqual([
      { path: '/work/wt/bench/models/my-x4.onnx', line: 1 },
      { path: '/home/alice/media-worker', line: 2 },
      { path: '/tmp/tmp.Zx81Qa/out', line: 5 },
    ]);
  });
});
