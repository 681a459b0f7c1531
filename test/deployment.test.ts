/**
 * The shipped deployment files, read as Docker and systemd read them: every variable they set is a
 * setting some table reads (no unknown names, no misspellings that would be silently ignored), and
 * the values pass the settings parser of every command.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findUnknownSettings, SETTINGS_SECTIONS } from '../src/config.js';
import { PACKAGE_ROOT } from '../src/paths.js';

const read = (file: string): Promise<string> => readFile(path.join(PACKAGE_ROOT, file), 'utf8');

/** Splits `A=1 B="two words"` the way systemd's Environment= and Docker's ENV do. */
function assignments(text: string): [string, string][] {
  const out: [string, string][] = [];
  for (const match of text.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)/g)) {
    const raw = match[2] as string;
    out.push([match[1] as string, /^["']/.test(raw) ? raw.slice(1, -1) : raw]);
  }
  return out;
}

/** Dockerfile `ENV` instructions (continuation lines joined); also the legacy `ENV NAME value` form. */
export function dockerEnv(dockerfile: string): [string, string][] {
  const instructions = dockerfile.replace(/\\\r?\n/g, ' ').split('\n');
  const out: [string, string][] = [];
  for (const line of instructions) {
    const match = /^\s*ENV\s+(.*)$/i.exec(line);
    if (match === null) continue;
    const body = (match[1] as string).trim();
    if (body.includes('=')) out.push(...assignments(body));
    else {
      const [name, ...value] = body.split(/\s+/);
      out.push([name as string, value.join(' ')]);
    }
  }
  return out;
}

/** systemd `Environment=` lines of a unit. */
export function unitEnvironment(unit: string): [string, string][] {
  return unit
    .split('\n')
    .filter((line) => line.startsWith('Environment='))
    .flatMap((line) => assignments(line.slice('Environment='.length)));
}

/** An EnvironmentFile: `NAME=value` lines, comments and blank lines skipped. */
export function environmentFile(text: string): [string, string][] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .flatMap((line) => assignments(line));
}

function checkAgainstSettings(env: Record<string, string>): void {
  expect(findUnknownSettings(env)).toEqual([]);
  for (const section of SETTINGS_SECTIONS) expect(() => section.load(env)).not.toThrow();
}

describe('Dockerfile.cuda', () => {
  it('sets only settings that exist, with valid values', async () => {
    const env = dockerEnv(await read('Dockerfile.cuda'));
    expect(env.length).toBeGreaterThan(0);
    checkAgainstSettings(Object.fromEntries(env));
  });

  it("writes results, temp files and models under the unprivileged user's directory, and sets nothing unread", async () => {
    const dockerfile = await read('Dockerfile.cuda');
    const env = Object.fromEntries(dockerEnv(dockerfile));
    for (const name of ['RESULTS_DIR', 'MEDIA_WORKER_TMP_DIR', 'MEDIA_WORKER_MODELS_DIR'])
      expect(env[name]).toMatch(/^\/var\/lib\/media-worker\//);
    expect(env).not.toHaveProperty('NODE_ENV');
    expect(dockerfile).toMatch(/^USER media-worker$/m);
    expect(dockerfile).toContain(
      'install -d -o media-worker -g media-worker /var/lib/media-worker/results /var/lib/media-worker/tmp',
    );
    expect(dockerfile).toContain(
      '--chown=media-worker:media-worker /opt/media-worker/models /var/lib/media-worker/models',
    );
    expect(dockerfile).toContain('models prepare');
  });
});

describe('the Node version', () => {
  it("is one LTS major for CI and the CUDA image, within package.json's engines", async () => {
    const ci = Number(/^NODE_LTS_MAJOR=(\d+)$/m.exec(await read('.ci/run'))?.[1]);
    const image = Number(/deb\.nodesource\.com\/node_(\d+)\.x/.exec(await read('Dockerfile.cuda'))?.[1]);
    const engines = (JSON.parse(await read('package.json')) as { engines: { node: string } }).engines.node;
    const floor = Number(/^>=(\d+)$/.exec(engines)?.[1]);
    expect(floor).toBeGreaterThanOrEqual(22);
    expect(ci).toBeGreaterThanOrEqual(floor);
    expect(image).toBe(ci);
  });
});

describe('the set-up of the tests (issue 56)', () => {
  it("is one script that the README's test command and .ci/run both run", async () => {
    const scripts = (JSON.parse(await read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['test']).toBe('bash scripts/test.sh');
    expect(await read('scripts/test.sh')).toMatch(/^\. scripts\/test-setup\.sh$/m);
    expect(await read('.ci/run')).toMatch(/^\. scripts\/test-setup\.sh$/m);
    const setup = await read('scripts/test-setup.sh');
    for (const needed of ['ffmpeg', 'nats-server', 'opencv-doc', 'prometheus', '/get-nats-server.sh', 'node@'])
      expect(setup).toContain(needed);
  });
});

describe('systemd/media-worker.service and its environment file', () => {
  it('sets only settings that exist, with valid values (Environment= lines, then the file, as systemd applies them)', async () => {
    const unit = unitEnvironment(await read('systemd/media-worker.service'));
    const file = environmentFile(await read('systemd/media-worker.env'));
    expect(unit.length).toBeGreaterThan(0);
    expect(file.length).toBeGreaterThan(0);
    checkAgainstSettings(Object.fromEntries(unit));
    checkAgainstSettings(Object.fromEntries(file));
    checkAgainstSettings(Object.fromEntries([...unit, ...file]));
  });

  it('grants write access to every directory its settings write to, an npm cache, and a umask a static server can read', async () => {
    const text = await read('systemd/media-worker.service');
    const env = Object.fromEntries([
      ...unitEnvironment(text),
      ...environmentFile(await read('systemd/media-worker.env')),
    ]);
    const writable = (/^ReadWritePaths=(.*)$/m.exec(text)?.[1] ?? '').split(/\s+/);
    for (const name of ['RESULTS_DIR', 'MEDIA_WORKER_TMP_DIR', 'MEDIA_WORKER_MODEL_FILES_DIR'])
      expect(writable).toContain(env[name]);
    expect(text).toMatch(/^CacheDirectory=media-worker$/m);
    expect(env['npm_config_cache']).toMatch(/^\/var\/cache\/media-worker\//);
    const umask = Number.parseInt(/^UMask=(\d+)$/m.exec(text)?.[1] ?? '777', 8);
    expect(umask & 0o044).toBe(0); // group and others may read results
    expect(text).not.toMatch(/^SupplementaryGroups=.*\brender\b/m);
    expect(text).toContain('models prepare');
  });
});

describe('the parsers of this test', () => {
  it('read quoted values and continuation lines', () => {
    expect(dockerEnv('ENV A=1 \\\n    B="two words"\nENV C 3 4\nRUN x=1')).toEqual([
      ['A', '1'],
      ['B', 'two words'],
      ['C', '3 4'],
    ]);
    expect(unitEnvironment('Environment=X=1 Y=two\nEnvironmentFile=/etc/x')).toEqual([
      ['X', '1'],
      ['Y', 'two'],
    ]);
  });
});
