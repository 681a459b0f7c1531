/**
 * A throwaway JetStream nats-server for a benchmark: NATS_SERVER_BIN or Debian's, on a free port on
 * 127.0.0.1, its store under `dir`; the child goes into `children` for the script to stop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

/** The nats-server to run: NATS_SERVER_BIN, else Debian's, else the PATH's (as the tests find it). */
export function natsServerBin(): string {
  return (
    process.env['NATS_SERVER_BIN'] ?? (existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server')
  );
}

/** The server's client URL once it listens (read from the ports file it writes). */
export async function startBenchNats(dir: string, children: ChildProcess[]): Promise<string> {
  const bin = natsServerBin();
  const child = spawn(
    bin,
    ['-p', '-1', '-a', '127.0.0.1', '-js', '-sd', path.join(dir, 'nats'), '--ports_file_dir', dir],
    { stdio: 'ignore' },
  );
  children.push(child);
  const file = path.join(dir, `${path.basename(bin)}_${child.pid}.ports`);
  for (let i = 0; i < 200; i++) {
    const ports = await readFile(file, 'utf8').then(
      (t) => JSON.parse(t) as { nats: string[] },
      () => null,
    );
    if (ports?.nats[0]) return ports.nats[0];
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('nats-server did not start');
}
