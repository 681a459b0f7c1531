/**
 * GET /results/...: the files this gateway serves (GATEWAY_SERVE_RESULTS), results and uploads,
 * each only through a link its secret signed and that has not expired. Results in a bucket are
 * streamed from it (../bucket-files.ts); uploads, and a local store's results, come from RESULTS_DIR.
 */
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../errors.js';
import type { AppDeps, Links } from '../app-deps.js';
import { registerBucketFiles } from '../bucket-files.js';

export async function registerFiles(app: FastifyInstance, deps: AppDeps, links: Links): Promise<void> {
  await app.register(async (files) => {
    files.addHook('onRequest', async (req, reply) => guardLink(req, reply, links));
    // Results in a bucket are streamed from it; uploads (and a local store's results) come from RESULTS_DIR.
    if (deps.resultsBucket !== undefined) registerBucketFiles(files, deps.resultsBucket);
    await files.register(fastifyStatic, {
      root: deps.resultsDir,
      prefix: '/results/',
      decorateReply: false,
      index: false,
      dotfiles: 'deny',
      cacheControl: false,
    });
  });
}

/** A file is served only through a link this gateway's secret signed and that has not expired. */
async function guardLink(req: FastifyRequest, reply: FastifyReply, links: Links): Promise<void> {
  const url = new URL(req.url, 'http://gateway.invalid');
  const query = {
    expires: url.searchParams.get('expires') ?? undefined,
    sig: url.searchParams.get('sig') ?? undefined,
  };
  const now = Date.now();
  const check = links.signer.check(url.pathname, query, now);
  if (check === 'invalid')
    throw ApiError.of(
      'NOT_FOUND',
      'Expected a link given by this API (with its expires and sig) but received an unsigned or altered one',
    );
  if (check === 'expired')
    throw ApiError.of(
      'LINK_EXPIRED',
      `Expected a link that has not expired but received one that expired at ${new Date(Number(query.expires) * 1000).toISOString()}`,
    );
  const name = path.posix.basename(decodeURIComponent(url.pathname)).replace(/[^A-Za-z0-9._-]/g, '_');
  void reply.headers({
    'content-disposition': `attachment; filename="${name}"`,
    'cache-control': `private, max-age=${Math.max(0, Number(query.expires) - Math.floor(now / 1000))}`,
  });
}
