/**
 * A throwaway certificate authority and a server certificate for 127.0.0.1 and localhost, made
 * with openssl for one test run (P-256 keys: quick to make).
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

export interface ThrowawayCa {
  caFile: string;
  certFile: string;
  keyFile: string;
}

const run = promisify(execFile);

export async function makeThrowawayCa(dir: string): Promise<ThrowawayCa> {
  const f = (name: string): string => path.join(dir, name);
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...key,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=media-worker test CA',
  ]);
  await run('openssl', ['req', ...key, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost']);
  await fs.writeFile(f('san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.pem'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('server.pem'),
    '-days',
    '1',
    '-extfile',
    f('san.ext'),
  ]);
  return { caFile: f('ca.pem'), certFile: f('server.pem'), keyFile: f('server.key') };
}
