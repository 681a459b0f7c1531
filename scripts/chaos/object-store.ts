/**
 * An S3-compatible server (s3rver, npm) in a child process of its own, for the scripts that store
 * results in a bucket (the chaos suite's `--store s3`, the storage benchmark): its buffers stay out
 * of the measuring process, and it outlives the workers the scripts kill. Stopped with `stop()`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';

export interface ObjectStoreProcess {
  endpoint: string;
  /** RESULTS_STORE=s3 settings and the credentials s3rver knows, for a worker's environment. */
  env: Record<string, string>;
  stop(): void;
}

export async function startObjectStore(
  directory: string,
  bucket: string,
  prefix = 'results',
): Promise<ObjectStoreProcess> {
  const code = `const S3rver = require('s3rver'); new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: ${JSON.stringify(directory)}, configureBuckets: [{ name: ${JSON.stringify(bucket)} }] }).run().then((a) => console.log(a.port));`;
  const child = spawn(process.execPath, ['-e', code], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  const endpoint = `http://127.0.0.1:${Number(line.toString().trim())}`;
  return {
    endpoint,
    env: {
      RESULTS_STORE: 's3',
      RESULTS_S3_BUCKET: bucket,
      RESULTS_S3_ENDPOINT: endpoint,
      RESULTS_S3_REGION: 'us-east-1',
      RESULTS_S3_PREFIX: prefix,
      RESULTS_S3_FORCE_PATH_STYLE: 'true',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
    stop: () => void child.kill(),
  };
}
