/** Test media made on the fly with the system's ffmpeg, in a temp directory removed afterwards. */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { JobError } from '../../src/errors.js';
import { resolveFfmpeg } from '../../src/media/binaries.js';

const run = promisify(execFile);

export const PHOTOS = fileURLToPath(new URL('../fixtures/photos', import.meta.url));

export async function makeTempDir(prefix: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `mw-test-${prefix}-`));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Runs ffmpeg with a quiet log; `args` are everything after the global options. */
export async function ffmpeg(args: string[]): Promise<void> {
  await run(resolveFfmpeg({ ffmpegPath: process.env['FFMPEG_PATH'] ?? '' }), [
    '-hide_banner',
    '-v',
    'error',
    '-y',
    ...args,
  ]);
}

/** A synthetic clip (testsrc2 picture, optionally a sine tone) of a given length. */
export async function makeClip(
  out: string,
  opts: { seconds: number; size?: string; rate?: number; audio?: boolean; codec?: string[]; extra?: string[] },
): Promise<string> {
  const size = opts.size ?? '64x48';
  const rate = opts.rate ?? 25;
  const inputs = ['-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=${rate}`];
  if (opts.audio === true) inputs.push('-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100');
  await ffmpeg([
    ...inputs,
    '-t',
    String(opts.seconds),
    ...(opts.codec ?? ['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p']),
    ...(opts.extra ?? []),
    out,
  ]);
  return out;
}

/** One second of a sine tone in the container/codec the file name and `codec` ask for. */
export async function makeTone(out: string, codec: string[] = [], seconds = 1): Promise<string> {
  await ffmpeg(['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=44100:duration=${seconds}`, ...codec, out]);
  return out;
}

/** The JobError a promise rejects with (failing the test when it resolves or rejects with something else). */
export async function failure(promise: Promise<unknown>): Promise<JobError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(JobError);
  return err as JobError;
}
