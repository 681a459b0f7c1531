/**
 * Test-only fault injection (docs/operations.md, "Kill points"): MEDIA_WORKER_TEST_KILL_AT names a
 * point of a job's path where this process SIGKILLs itself, as a crash or the OOM killer would
 * there, so that a test shows what the redelivery finds at that exact point instead of hoping a
 * timed kill lands on it. Unset (production): every call is a no-op. Not a setting of the settings
 * table on purpose: no operator should set it.
 */
export const KILL_POINTS = [
  /** The claim is stored; nothing has run. */
  'claimed',
  /** The executor returned (its result is stored); no terminal event yet. */
  'ran',
  /** The terminal event is stored; the job is neither acked nor terminated. */
  'published',
] as const;

export type KillPoint = (typeof KILL_POINTS)[number];

const KILL_AT_ENV = 'MEDIA_WORKER_TEST_KILL_AT';

function killAt(): KillPoint | undefined {
  const value = process.env[KILL_AT_ENV];
  if (value === undefined || value === '') return undefined;
  if (!(KILL_POINTS as readonly string[]).includes(value)) throw new Error(`${KILL_AT_ENV} must be one of ${KILL_POINTS.join(', ')}; got ${JSON.stringify(value)}`);
  return value as KillPoint;
}

const KILL_AT = killAt();

/** Dies here, at once and without cleanup, when MEDIA_WORKER_TEST_KILL_AT names this point. */
export function reachKillPoint(point: KillPoint): void {
  if (KILL_AT === point) process.kill(process.pid, 'SIGKILL');
}
