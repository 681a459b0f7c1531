/**
 * Nothing left behind by a kill, for every kind (issue 57, item 4): `media-worker serve` as shipped
 * (dist/), every kind at its shipped concurrency, SIGKILLed while a readiness check holds temp
 * space; restarted, its start-up sweep reclaims what the dead process owned, and the temp
 * directories end empty. Every kind's readiness writes a probe into the temp and results
 * directories (app/readiness-checks.ts), music-video's renders a trial video in a temp directory of
 * its own (music-video/readiness.ts), and a model fetched at run time is packed in the OS temp
 * directory (inference/npm-tarball.ts): a kill lands inside the trial render by watching for it;
 * the probes and packs, which live for milliseconds, are made by the same functions in a process
 * that is then SIGKILLed, as a kill inside them would leave them.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { parseOwnerToken } from '../../../src/media/index.js';
import { provisionFromEnv } from '../../helpers/provision.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { serveEnv, serveGroup } from '../../helpers/serve-process.js';

let dir: string;
let roles: RoleNats;
let tmp: string;
let osTmp: string;
let results: string;

/** Every kind as shipped: no WORKER_CONCURRENCY. TMPDIR is the OS temp directory of the process. */
const env = (): NodeJS.ProcessEnv => ({
  ...serveEnv(roles),
  TMPDIR: osTmp,
  MEDIA_WORKER_TMP_DIR: tmp,
  RESULTS_DIR: results,
});
const serves = serveGroup(env);

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'media-worker-readiness-kill-'));
  [tmp, osTmp, results] = [path.join(dir, 'tmp'), path.join(dir, 'os-tmp'), path.join(dir, 'results')];
  await Promise.all([tmp, osTmp, results].map((d) => fs.mkdir(d)));
  roles = await startRoleNats(dir);
  await provisionFromEnv({ ...env(), ...roles.env('operator') });
});

afterAll(async () => {
  await serves.stopAll();
  await roles?.close();
  await fs.rm(dir, { recursive: true, force: true });
});

/** Entries of the directories whose owner token names `pid`. */
async function ownedBy(pid: number): Promise<string[]> {
  const out: string[] = [];
  for (const d of [tmp, osTmp, results])
    for (const n of await fs.readdir(d)) if (parseOwnerToken(n)?.pid === pid) out.push(path.join(path.basename(d), n));
  return out.sort();
}

const ownedEntries = async (): Promise<string[]> =>
  (
    await Promise.all(
      [tmp, osTmp].map(async (d) => (await fs.readdir(d)).filter((n) => parseOwnerToken(n) !== undefined)),
    )
  ).flat();

it('a worker killed inside its readiness checks leaves temp space the next start reclaims: the temp directories end empty', async () => {
  // 1. The real daemon, killed the moment music-video's trial render holds its temp directory.
  const first = serves.start();
  const pid = first.child.pid as number;
  const caught = await waitFor(
    'a readiness check to hold temp space',
    async () => {
      if (first.child.exitCode !== null) throw new Error(`serve exited: ${first.log().slice(-2000)}`);
      const names = (await fs.readdir(tmp)).filter(
        (n) => n.includes('music-video-readiness') && parseOwnerToken(n)?.pid === pid,
      );
      return names.length > 0 ? names : undefined;
    },
    120_000,
    10,
  );
  first.child.kill('SIGKILL');
  await first.exited;
  expect(caught[0]).toMatch(/^media-worker-p\d+s\d+d[0-9a-f]{8}-music-video-readiness-/);
  expect((await ownedBy(pid)).some((n) => n.includes('music-video-readiness'))).toBe(true);

  // 2. What a kill inside the other kinds' readiness probes and a model fetch leaves: made by the
  // same functions in a process killed right after.
  const media = pathToFileURL(path.join(PACKAGE_ROOT, 'dist', 'src', 'media', 'index.js')).href;
  const script = `
    const m = await import(${JSON.stringify(media)});
    const fs = await import('node:fs/promises');
    const probe = (d) => fs.writeFile(d + '/' + m.JOB_DIR_PREFIX + m.ownerToken() + '-write-probe-0a1b2c3d', '');
    await probe(${JSON.stringify(tmp)});
    await probe(${JSON.stringify(results)});
    await m.ownedTempDir(${JSON.stringify(osTmp)}, 'npm-pack');
    process.stdout.write(String(process.pid));
    process.kill(process.pid, 'SIGKILL');`;
  const killed = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let killedPid = '';
  killed.stdout?.on('data', (c: Buffer) => void (killedPid += c.toString()));
  expect(await new Promise((r) => killed.once('exit', (_code, signal) => r(signal)))).toBe('SIGKILL');
  const probes = await ownedBy(Number(killedPid));
  expect(probes).toHaveLength(3);

  // 3. Restarted: the start-up sweep removes every entry of both dead processes; once the new
  // process's own checks are done, nothing is left in the temp directories.
  const again = serves.start();
  await again.serving(120_000);
  expect(await ownedBy(pid)).toEqual([]);
  expect(await ownedBy(Number(killedPid))).toEqual([]);
  await waitFor(
    'the temp directories to be empty',
    async () => ((await ownedEntries()).length === 0 ? true : undefined),
    120_000,
    200,
  );
  expect(await fs.readdir(tmp)).toEqual([]);
  again.child.kill('SIGTERM');
  await again.exited;
}, 300_000);
