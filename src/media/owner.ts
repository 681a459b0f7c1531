/**
 * Who made a temporary file or directory, written into its name, so that what a killed process
 * left behind can be told from what a live one is using. The owner token is the process id plus
 * what survives pid reuse: the process's start time (field 22 of /proc/<pid>/stat, in clock ticks
 * since boot) and a domain naming the kernel boot and pid namespace it was counted in (a pid means
 * nothing in another container or after a reboot).
 *
 *   p<pid>s<start time>d<domain: 8 hex digits>      e.g. p41207s9381122d3fa09c1e
 *
 * A token of this boot and pid namespace is judged exactly: alive while a process with that pid and
 * that start time runs. A token from another domain (a worker in another container sharing the
 * directory, or one from before a reboot) cannot be judged from here: callers remove such leftovers
 * only once they are older than any job can last.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';

export interface ProcessOwner {
  pid: number;
  /** Start time in clock ticks since boot; 0 where /proc is not available. */
  start: number;
  /** Boot and pid namespace, as 8 hex digits. */
  domain: string;
}

export type OwnerState = 'alive' | 'dead' | 'foreign';

const TOKEN_PATTERN = /p(\d{1,10})s(\d{1,20})d([0-9a-f]{8})/;

function readOrEmpty(read: () => string): string {
  try {
    return read();
  } catch {
    return '';
  }
}

/** Field 22 (starttime) of a /proc/<pid>/stat line; the command name may hold spaces and parentheses. */
export function startTimeOf(statLine: string): number | undefined {
  const close = statLine.lastIndexOf(')');
  if (close < 0) return undefined;
  // Fields after the name start with field 3 (state): starttime is the 20th of them.
  const value = Number(statLine.slice(close + 2).split(' ')[19]);
  return Number.isSafeInteger(value) ? value : undefined;
}

function currentDomain(): string {
  const boot = readOrEmpty(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
  const pidNamespace = readOrEmpty(() => readlinkSync('/proc/self/ns/pid'));
  // Without /proc (macOS development machines): the host name and the boot time stand in.
  const seed =
    boot === '' ? `${os.hostname()}:${Math.round(Date.now() / 1000 - os.uptime())}` : `${boot}:${pidNamespace}`;
  return createHash('sha256').update(seed).digest('hex').slice(0, 8);
}

let self: ProcessOwner | undefined;

/** This process as an owner (computed once). */
export function currentOwner(): ProcessOwner {
  if (self === undefined || self.pid !== process.pid) {
    const start = startTimeOf(readOrEmpty(() => readFileSync('/proc/self/stat', 'utf8'))) ?? 0;
    self = { pid: process.pid, start, domain: currentDomain() };
  }
  return self;
}

export function ownerToken(owner: ProcessOwner = currentOwner()): string {
  return `p${owner.pid}s${owner.start}d${owner.domain}`;
}

/** The owner named anywhere in `name`, if any. */
export function parseOwnerToken(name: string): ProcessOwner | undefined {
  const match = TOKEN_PATTERN.exec(name);
  if (match === null) return undefined;
  return { pid: Number(match[1]), start: Number(match[2]), domain: match[3] as string };
}

/** A name for a temporary entry of this process: `.<label>-<owner token>-<random>`. */
export function ownedTempName(label: string): string {
  return `.${label}-${ownerToken()}-${randomBytes(4).toString('hex')}`;
}

/** Whether the owner still runs: exactly for this boot and pid namespace, 'foreign' otherwise. */
export async function ownerState(owner: ProcessOwner): Promise<OwnerState> {
  const me = currentOwner();
  if (owner.domain !== me.domain) return 'foreign';
  if (owner.pid === me.pid) return owner.start === me.start ? 'alive' : 'dead';
  if (me.start === 0) return signalProbe(owner.pid);
  let stat: string;
  try {
    stat = await readFile(`/proc/${owner.pid}/stat`, 'utf8');
  } catch {
    return 'dead';
  }
  // The same pid with another start time is another process: the owner is gone.
  return startTimeOf(stat) === owner.start ? 'alive' : 'dead';
}

function signalProbe(pid: number): OwnerState {
  try {
    process.kill(pid, 0);
    return 'alive';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM' ? 'alive' : 'dead';
  }
}
