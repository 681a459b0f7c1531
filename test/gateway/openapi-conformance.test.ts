/**
 * The OpenAPI document the gateway serves, read as a client generator reads it (ajv: `oneOf` means
 * exactly one branch), against the gateway's real answers (issue 37, item 6):
 *   1. each completed task's `result` matches exactly one branch, its kind's (a video upscale's
 *      result used to match the lip-sync branch too);
 *   2. an input URL is valid by the document exactly when the API does not refuse it as INVALID_URL
 *      (`https://` without a host was valid by the document);
 *   3. /api/v1/estimate's body is the submissions' union: `{}` is invalid, as the API says (400),
 *      and each body the API takes matches exactly one branch;
 *   4. in the one-host set-up (http:// public address, uploads on), the upload's link is valid by
 *      that gateway's document as an input, and the API takes it (the worker fetches it).
 * The gateway runs in-process without NATS (stand-in-gateway.ts); the image and video results
 * come from the real pipelines, the quotes from the worker's real quote.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { pino } from 'pino';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, executeJob, type Engine } from '../../src/app/index.js';
import { loadConfig } from '../../src/config.js';
import { kindOfModel, parseJob, reportedModel, KINDS, type ModelId, type TaskResult } from '../../src/jobs/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../src/paths.js';
import type { GatewayApp } from '../../src/gateway/http/app.js';
import type { TaskRecord } from '../../src/gateway/store/records.js';
import { makeClip } from '../media/helpers.js';
import { call, standInGateway } from './stand-in-gateway.js';

type Json = Record<string, unknown>;

const PUBLIC = 'https://api.example.com';
const SECRET = 'conformance-secret-conformance-secret-x';
const logger = pino({ level: 'silent' });

let dir: string;
let engine: Engine;
let photo: string;
let app: GatewayApp;
let doc: Json;

/** A strict validator of one schema of the document (its components resolvable). */
function validator(schema: unknown, of: Json = doc): ValidateFunction {
  // OpenAPI 3.0 keywords (discriminator, example) are not JSON Schema's: skipped, and oneOf stays
  // "exactly one". Formats are the document's to say; the patterns are checked.
  return new Ajv({ strict: false, validateFormats: false, allErrors: true }).compile(
    jsonSchema({ ...(schema as Json), components: of['components'] }) as Json,
  );
}

/** OpenAPI 3.0's `nullable` on a oneOf without a type (the task's result) as JSON Schema says it: one more branch, null. */
function jsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(jsonSchema);
  if (typeof node !== 'object' || node === null) return node;
  const { nullable, ...rest } = node as Json;
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, jsonSchema(v)]));
  if (nullable === true && out['type'] === undefined && Array.isArray(out['oneOf']))
    out['oneOf'] = [...out['oneOf'], { type: 'null' }];
  else if (nullable === true) out['nullable'] = true;
  return out;
}

const at = (node: unknown, ...keys: string[]): Json => keys.reduce((n, k) => (n as Json)[k], node) as Json;
const requestSchema = (d: Json, route: string) =>
  at(d, 'paths', route, 'post', 'requestBody', 'content', 'application/json', 'schema');
const responseSchema = (d: Json, route: string, method: string, status: string) =>
  at(d, 'paths', route, method, 'responses', status, 'content', 'application/json', 'schema');

/** A completed task of `model` with `result`, as the gateway stores it. */
function completed(id: string, model: ModelId, result: TaskResult): TaskRecord {
  const kind = kindOfModel(model);
  const mediaType = KINDS[kind].mediaType;
  return {
    id,
    accountId: 'acct_stand_in',
    model,
    kind,
    status: 'completed',
    creditsUsed: 20,
    createdAt: '2026-11-28T10:00:00.000Z',
    debitSeq: 1,
    extras: {},
    reportedModel: reportedModel(model),
    ...(mediaType === undefined ? {} : { mediaType }),
    result,
    finishedAt: '2026-11-28T10:01:00.000Z',
  };
}

async function run(id: string, body: unknown): Promise<TaskResult> {
  const job = parseJob(body);
  const kind = kindOfModel(job.model);
  const done = await executeJob(job, engine, {
    taskId: id,
    logger,
    allowLocalPaths: true,
    store: async (_local, meta) => ({ url: `${PUBLIC}/results/${kind}/${id}/output.${meta.ext}` }),
  });
  return done.result;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'mw-openapi-conformance-'));
  photo = path.join(dir, 'small.png');
  await sharp(path.join(BUNDLED_PHOTOS_DIR, 'astronaut.png')).resize(40, 27).png().toFile(photo);
  const clip = await makeClip(path.join(dir, 'clip.mp4'), { seconds: 0.4, size: '32x24', rate: 10 });
  engine = createEngine(loadConfig({ MEDIA_WORKER_TMP_DIR: dir }), logger);
  const tasks = {
    t_image: completed(
      't_image',
      'vendor-image-upscale',
      await run('t_image', { model: 'vendor-image-upscale', input: { image_url: photo } }),
    ),
    t_video: completed(
      't_video',
      'vendor-video-upscale',
      await run('t_video', { model: 'vendor-video-upscale', input: { video_url: clip } }),
    ),
    // Shapes the gateway's result check takes for these kinds (their pipelines need weights or a backend).
    t_lipsync: completed('t_lipsync', 'vendor-lipsync-2', {
      url: `${PUBLIC}/results/lipsync/t_lipsync/output.mp4`,
      type: 'video',
      duration: 1.2,
    }),
    t_music: completed('t_music', 'vendor-v5-generate-music', {
      songs: [1, 2].map((n) => ({
        audio_url: `${PUBLIC}/results/music/t_music/song-${n}.mp3`,
        image_url: `${PUBLIC}/results/music/t_music/cover-${n}.png`,
        duration: 30,
        title: 'Rain',
        tags: 'jazz',
        prompt: 'rain',
      })),
    }),
  };
  app = await standInGateway({
    env: { GATEWAY_SERVE_RESULTS: 'true', GATEWAY_LINK_SECRET: SECRET, GATEWAY_PUBLIC_URL: PUBLIC },
    resultsDir: dir,
    config: loadConfig({ MEDIA_WORKER_TMP_DIR: dir }),
    allowLocalPaths: false,
    tasks,
  });
  doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as Json;
}, 120_000);

afterAll(async () => {
  await app?.close();
  await engine?.release();
  await rm(dir, { recursive: true, force: true });
});

describe('the OpenAPI document, validated strictly against the gateway (issue 37, item 6)', () => {
  it("1: each kind's completed task matches exactly one result branch, its own", async () => {
    const branches = at(
      responseSchema(doc, '/api/v1/tasks/{id}', 'get', '200'),
      'properties',
      'data',
      'properties',
      'result',
    )['oneOf'] as Json[];
    const response = validator(responseSchema(doc, '/api/v1/tasks/{id}', 'get', '200'));
    const titles: Record<string, string> = {
      t_image: 'ImageResult',
      t_video: 'VideoResult',
      t_lipsync: 'LipsyncResult',
      t_music: 'MusicResult',
    };
    for (const [id, title] of Object.entries(titles)) {
      const polled = await call(app, 'GET', `/api/v1/tasks/${id}`);
      expect(polled.status, id).toBe(200);
      const result = at(polled.body, 'data', 'result');
      const matching = branches.filter((branch) => validator(branch)(result)).map((branch) => branch['title']);
      expect(matching, id).toEqual([title]);
      expect(response(polled.body), `${id}: ${JSON.stringify(response.errors)}`).toBe(true);
    }
  });

  it('2: an input URL is valid by the document exactly when the API does not refuse it as INVALID_URL', async () => {
    const estimate = validator(requestSchema(doc, '/api/v1/estimate'));
    // IP addresses only: nothing here waits for a name server (a private address is FETCH_FAILED, not INVALID_URL).
    const urls = [
      'https://',
      'https:///',
      'https://@/',
      'https:// 127.0.0.1/a.png',
      'http://127.0.0.1/a.png',
      'ftp://127.0.0.1/a.png',
      'https://127.0.0.1:99999/a.png',
      'not a url',
      'https://127.0.0.1/a.png',
      'https://127.0.0.1:8443/a.png?x=1#y',
      'https://user:pw@127.0.0.1/a.png',
      'https://[::1]/a.png',
      'https:///127.0.0.1/a.png',
    ];
    const verdicts = [];
    for (const url of urls) {
      const body = { image_url: url };
      const answer = await call(app, 'POST', '/api/v1/estimate', body);
      const refused = answer.status === 400 && at(answer.body, 'error')['code'] === 'INVALID_URL';
      verdicts.push({ url, api: refused ? 'INVALID_URL' : answer.status, document: estimate(body) });
    }
    for (const v of verdicts) expect(v.document, JSON.stringify(v)).toBe(v.api !== 'INVALID_URL');
    expect(verdicts.filter((v) => v.api === 'INVALID_URL').map((v) => v.url)).toContain('https://');
  }, 60_000);

  it("3: the estimate's body is the submissions' union: {} is refused by both, each taken body matches one branch", async () => {
    const schema = requestSchema(doc, '/api/v1/estimate');
    const whole = validator(schema);
    const branches = (schema['oneOf'] as Json[]).map((branch) => validator(branch));
    const url = 'https://127.0.0.1/a';
    const bodies: unknown[] = [
      {},
      { prompt: 'rain' },
      { model: 'vendor-nothing', input: {} },
      { image_url: url, upscale_factor: '3' },
      { model: 'vendor-v5-generate-music', input: { prompt: 'rain' } },
      { model: 'vendor-v5-generate-music', input: { custom_mode: true, title: 'Rain', style: 'jazz' } },
      { model: 'vendor-lipsync-3', input: { video_url: url, audio_url: url } },
      { model: 'vendor-lipsync-2', input: { video_url: url } },
      { model: 'vendor-image-upscale', input: { image_url: url, upscale_factor: '4' } },
      { video_url: url, audio_url: url, sync_mode: 'loop' },
      { video_url: url, audio_url: url, sync_mode: 'backwards' },
      { image_url: url },
      { image_url: url, video_url: url },
      { video_url: url, hdr: 'sdr' },
    ];
    for (const body of bodies) {
      const answer = await call(app, 'POST', '/api/v1/estimate', body);
      const taken = answer.status !== 400;
      expect(whole(body), `${JSON.stringify(body)} answered ${JSON.stringify(answer.body)}`).toBe(taken);
      if (taken)
        expect(
          branches.filter((branch) => branch(body)),
          JSON.stringify(body),
        ).toHaveLength(1);
    }
    const empty = await call(app, 'POST', '/api/v1/estimate', {});
    expect([empty.status, at(empty.body, 'error')['code']]).toEqual([400, 'UNKNOWN_MODEL']);
  }, 60_000);

  it("4: in the one-host set-up, the upload's http:// link is an input by that gateway's document, and the API takes it", async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const oneHost = await standInGateway({
      env: {
        GATEWAY_SERVE_RESULTS: 'true',
        GATEWAY_UPLOADS: 'true',
        GATEWAY_LINK_SECRET: SECRET,
        GATEWAY_PUBLIC_URL: base,
      },
      resultsDir: dir,
      // The one-host recipe: the worker may fetch the gateway's own files (docs/operations.md).
      config: loadConfig({ MEDIA_WORKER_TMP_DIR: dir, MEDIA_WORKER_PRIVATE_ORIGINS: `${base}/results/` }),
      allowLocalPaths: false,
    });
    try {
      await oneHost.listen({ host: '127.0.0.1', port });
      const oneHostDoc = (await oneHost.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as Json;
      const uploaded = await call(oneHost, 'POST', '/api/v1/uploads', await readFile(photo), 'image/png');
      expect(uploaded.status).toBe(201);
      expect(validator(responseSchema(oneHostDoc, '/api/v1/uploads', 'post', '201'), oneHostDoc)(uploaded.body)).toBe(
        true,
      );
      const link = String(at(uploaded.body, 'data')['url']);
      expect(link.startsWith(`${base}/results/uploads/`)).toBe(true);

      const body = { model: 'vendor-image-upscale', input: { image_url: link } };
      expect(validator(requestSchema(oneHostDoc, '/api/v1/generate'), oneHostDoc)(body)).toBe(true);
      expect(validator(requestSchema(oneHostDoc, '/api/v1/estimate'), oneHostDoc)(body)).toBe(true);
      const estimated = await call(oneHost, 'POST', '/api/v1/estimate', body);
      expect([estimated.status, at(estimated.body, 'data')['creditsUsed']]).toEqual([200, 20]);
      // The https gateway's document does not take another gateway's http:// links.
      expect(validator(requestSchema(doc, '/api/v1/generate'))(body)).toBe(false);
    } finally {
      await oneHost.close();
    }
  }, 60_000);
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
