/**
 * The shipped users of deploy/nats/media-users.conf with more worker hosts, each added as
 * docs/operations.md says ("Worker hosts"): the block between `# worker host "host1": begin` and
 * `end` copied with every `host1` and `HOST1` replaced. For the cluster script and the tests that
 * run the shipped configuration with several hosts.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';

export const USERS_CONF = path.join(PACKAGE_ROOT, 'deploy', 'nats', 'media-users.conf');
/** The worker host of the shipped file. */
export const SHIPPED_HOST = 'host1';
const HOST_BLOCK = /^ *# worker host "host1": begin[^\n]*\n[\s\S]*?# worker host "host1": end[^\n]*\n/m;

/** The server's environment variable of a user's password (`worker-host1` -> `MW_WORKER_HOST1_PASSWORD`). */
export function passwordVariable(user: string): string {
  return `MW_${user.toUpperCase().replace(/-/g, '_')}_PASSWORD`;
}

/** The shipped users file with the host block repeated for each extra host. */
export async function usersWithHosts(hosts: readonly string[]): Promise<string> {
  // The host's name ends up in a configuration variable (`$MW_WORKER_<HOST>_PASSWORD`): no `-` there.
  for (const h of hosts)
    if (!/^[A-Za-z0-9_]+$/.test(h))
      throw new Error(`Expected a worker host name of letters, digits and _ but received ${JSON.stringify(h)}`);
  const shipped = await readFile(USERS_CONF, 'utf8');
  const block = HOST_BLOCK.exec(shipped)?.[0];
  if (block === undefined) throw new Error('deploy/nats/media-users.conf has no worker host block');
  const copies = hosts.map((h) =>
    block.replaceAll(SHIPPED_HOST, h).replaceAll(SHIPPED_HOST.toUpperCase(), h.toUpperCase()),
  );
  return shipped.replace(block, [block, ...copies].join(''));
}
