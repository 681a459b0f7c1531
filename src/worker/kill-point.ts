/**
 * Test-only fault injection (docs/operations.md, "Kill points"): MEDIA_WORKER_TEST_KILL_AT names a
 * point of a job's path where this process SIGKILLs itself, as a crash or the OOM killer would
 * there, so that a test shows what the redelivery finds at that exact point instead of hoping a
 * timed kill lands on it. Unset (production): every call is a no-op. Not a setting of the settings
 * table on purpose: no operator should set it (worker/settings.ts lists it among its variables).
 */
export const KILL_POINTS = [
  /** The claim is stored; nothing has run. */
  'claimed',
  /**
   * A bucket store's multipart upload is under way: at least one part is stored, the upload is
   * neither completed nor aborted (a host lost mid-upload leaves an open upload, never an object).
   */
  'multipart',
  /** A result file is stored and its stored copy confirmed (size, sha256); the store has not yet answered. */
  'stored',
  /** The executor returned (its result is stored); no terminal event yet. */
  'ran',
  /** The terminal event is stored; the job is neither acked nor terminated. */
  'published',
] as const;

export type KillPoint = (typeof KILL_POINTS)[number];

const KILL_AT_ENV = 'MEDIA_WORKER_TEST_KILL_AT';

/** Where this process dies, read once; a value that names no point is refused when the worker starts. */
let killAt: KillPoint | undefined | null = null;

/** The point MEDIA_WORKER_TEST_KILL_AT names, if any; throws, naming the variable, for a value that names none. */
export function checkKillPoint(): KillPoint | undefined {
  if (killAt !== null) return killAt;
  const value = process.env['MEDIA_WORKER_TEST_KILL_AT'];
  if (value !== undefined && value !== '' && !(KILL_POINTS as readonly string[]).includes(value)) {
    throw new Error(`${KILL_AT_ENV} must be one of ${KILL_POINTS.join(', ')}; got ${JSON.stringify(value)}`);
  }
  killAt = value === undefined || value === '' ? undefined : (value as KillPoint);
  return killAt;
}

/** Dies here, at once and without cleanup, when MEDIA_WORKER_TEST_KILL_AT names this point. */
export function reachKillPoint(point: KillPoint): void {
  if (checkKillPoint() === point) process.kill(process.pid, 'SIGKILL');
}
