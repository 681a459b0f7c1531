/**
 * Results in a bucket (RESULTS_STORE=s3 or upload-url) served by the gateway under /results/, as
 * the local store's files are (GATEWAY_SERVE_RESULTS; docs/results-storage.md): behind the same
 * signed, expiring links (each kind's lifetime, up to 14 days: a presigned GET cannot live longer
 * than 7 days, so the gateway streams instead), a range request passed to the bucket as one, the
 * object streamed through without being held. Only `<kind>/<task id>/<name>.<ext>` keys are served,
 * and the customers' uploads, `uploads/<account id>/<upload id>.<ext>` (bucket-upload-store.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { JOB_KINDS } from '../../jobs/index.js';
import { TASK_ID_PATTERN, bucketStatus, objectKey, type ObjectStore } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import { ACCOUNT_ID_PATTERN } from '../ids.js';

const FILE_NAME = /^[A-Za-z0-9_-]{1,64}\.[a-z0-9]{1,8}$/;
const RANGE = /^bytes=\d*-\d*$/;

const notFound = (): ApiError =>
  ApiError.of('NOT_FOUND', 'Expected the link of a stored result but received one whose file is not there');

/** The routes, registered in the scope whose onRequest hook checks the link. */
export function registerBucketFiles(files: FastifyInstance, bucket: () => Promise<ObjectStore>): void {
  files.route<{ Params: { kind: string; task: string; file: string } }>({
    method: ['GET', 'HEAD'],
    url: '/results/:kind/:task/:file',
    schema: { hide: true },
    handler: async (req, reply) => {
      const { kind, task, file } = req.params;
      if (!(JOB_KINDS as readonly string[]).includes(kind) || !TASK_ID_PATTERN.test(task) || !FILE_NAME.test(file))
        throw notFound();
      return serveObject(req, reply, await bucket(), `${kind}/${task}/${file}`);
    },
  });
  files.route<{ Params: { account: string; file: string } }>({
    method: ['GET', 'HEAD'],
    url: '/results/uploads/:account/:file',
    schema: { hide: true },
    handler: async (req, reply) => {
      const { account, file } = req.params;
      if (!ACCOUNT_ID_PATTERN.test(account) || !FILE_NAME.test(file)) throw notFound();
      return serveObject(req, reply, await bucket(), `uploads/${account}/${file}`);
    },
  });
}

/** The object at `relative` under the prefix, streamed, a range passed on as one. */
async function serveObject(
  req: FastifyRequest,
  reply: FastifyReply,
  store: ObjectStore,
  relative: string,
): Promise<FastifyReply> {
  const { GetObjectCommand, HeadObjectCommand } = await import('@aws-sdk/client-s3');
  const range = req.headers.range;
  const input = {
    Bucket: store.bucket,
    Key: objectKey(store.prefix, relative),
    ...(typeof range === 'string' && RANGE.test(range) ? { Range: range } : {}),
  };
  try {
    if (req.method === 'HEAD') {
      const head = await store.client.send(new HeadObjectCommand(input));
      return reply
        .headers({
          'content-type': head.ContentType ?? 'application/octet-stream',
          'content-length': String(head.ContentLength ?? 0),
          'accept-ranges': 'bytes',
        })
        .send();
    }
    const object = await store.client.send(new GetObjectCommand(input));
    void reply.headers({
      'content-type': object.ContentType ?? 'application/octet-stream',
      'accept-ranges': 'bytes',
      ...(object.ContentLength === undefined ? {} : { 'content-length': String(object.ContentLength) }),
      ...(object.ContentRange === undefined ? {} : { 'content-range': object.ContentRange }),
    });
    return reply.code(object.ContentRange === undefined ? 200 : 206).send(object.Body);
  } catch (err) {
    const status = bucketStatus(err);
    if (status === 404) throw notFound();
    if (status === 416)
      throw new ApiError(
        'RANGE_NOT_SATISFIABLE',
        416,
        `Expected a range within the file but received ${JSON.stringify(range)}`,
      );
    throw err;
  }
}
