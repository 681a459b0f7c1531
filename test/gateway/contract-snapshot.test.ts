/**
 * What the contract shows the outside, frozen before the job kinds moved into descriptors (issue 37):
 * the OpenAPI document the gateway serves, the protocol's JSON Schemas (docs/schemas/), the
 * `config --reference` table, and the quote replies and error bodies of a corpus of jobs (real
 * photos, clips made by ffmpeg, and bodies with missing or invalid fields in every kind, in the
 * spec's check order) through the quote and through the gateway's HTTP routes. The files under
 * test/snapshots/contract/ were written by the code before the move; this test compares the code of
 * today with them. A deliberate change is a commented correction below (CORRECTIONS), never a
 * silent rewrite of a file. UPDATE_CONTRACT_SNAPSHOT=1 rewrites the files from the code of today
 * (a new kind's lines; review the diff): the corrections are idempotent, so they still pass on a
 * document that has them, and the corrected estimate body is written again too.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allSettingsReference, loadConfig } from '../../src/config.js';
import { quoteOnly } from '../../src/app/index.js';
import { HTTPS_URL_PATTERN, JobError, errorBody, parseJob } from '../../src/jobs/index.js';
import { wireJsonSchemas } from '../../src/protocol/index.js';
import type { GatewayApp } from '../../src/gateway/http/app.js';
import { HTTP_ERROR_STATUS } from '../../src/gateway/errors.js';
import { PHOTOS, ffmpeg, makeClip, makeTempDir, makeTone } from '../media/helpers.js';
import { call, standInGateway } from './stand-in-gateway.js';

const SNAPSHOT_DIR = path.join(import.meta.dirname, '..', 'snapshots', 'contract');
const UPDATE = process.env['UPDATE_CONTRACT_SNAPSHOT'] === '1';

/** The figures of the estimate depend on the cores: two, as on the machine that wrote the snapshot. */
const config = loadConfig({ MEDIA_WORKER_THREADS: '2' });

let dir: string;
let cleanup: () => Promise<void>;
const media: Record<string, string> = {};

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('contract-snapshot'));
  media['clip'] = await makeClip(path.join(dir, 'clip.mp4'), { seconds: 3.2, rate: 25 });
  media['clipWithSound'] = await makeClip(path.join(dir, 'sound.mov'), {
    seconds: 2,
    rate: 30,
    audio: true,
    extra: ['-c:a', 'aac'],
  });
  media['long'] = await makeClip(path.join(dir, 'long.mp4'), { seconds: 61, rate: 5 });
  media['webm'] = await makeClip(path.join(dir, 'clip.webm'), {
    seconds: 1,
    rate: 10,
    codec: ['-c:v', 'libvpx', '-deadline', 'realtime'],
  });
  media['tone'] = await makeTone(path.join(dir, 'tone.mp3'), [], 2);
  media['longTone'] = await makeTone(path.join(dir, 'long.wav'), [], 5);
  media['photo'] = path.join(PHOTOS, 'chelsea.png');
  // 7 MP: x2 is the 48 MP tier, x4 over 96 MP.
  media['large'] = path.join(dir, 'large.png');
  await ffmpeg(['-f', 'lavfi', '-i', 'testsrc2=size=3500x2000', '-frames:v', '1', media['large']]);
}, 60_000);
afterAll(async () => cleanup());

/** JSON with the temp directory's name replaced, so that the text is the same on every run. */
function stable(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value).replaceAll(dir, '<dir>').replaceAll(PHOTOS, '<photos>'));
}

async function compare(name: string, actual: unknown): Promise<void> {
  const file = path.join(SNAPSHOT_DIR, name);
  const text = typeof actual === 'string' ? actual : `${JSON.stringify(actual, null, 2)}\n`;
  if (UPDATE) {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, text);
  }
  const expected = await readFile(file, 'utf8');
  if (typeof actual === 'string') expect(text).toBe(expected);
  else expect(actual).toEqual(JSON.parse(expected));
}

type Json = Record<string, unknown>;

/** Every object in `node`, with the key it sits under. */
function eachObject(node: unknown, visit: (object: Json, key: string | undefined) => void, key?: string): void {
  if (Array.isArray(node)) for (const item of node) eachObject(item, visit);
  else if (typeof node === 'object' && node !== null) {
    visit(node as Json, key);
    for (const [childKey, child] of Object.entries(node)) eachObject(child, visit, childKey);
  }
}

const at = (node: unknown, ...keys: string[]): Json => keys.reduce((n, k) => (n as Json)[k], node) as Json;

/**
 * The deliberate changes of the document since the snapshot, each applied to the snapshot's copy
 * before comparing: the four corrections of issue 37, item 6 (test/gateway/openapi-conformance.test.ts
 * checks each against real requests and responses), and the error lists read from one table (issue 55,
 * test/gateway/errors.test.ts). Nothing else may differ.
 */
const CORRECTIONS: { why: string; apply(doc: Json): Promise<void> | void }[] = [
  {
    why: 'point 1: the lip-sync result is closed, so a video upscale result (type "video" too) matches one branch of the task\'s result oneOf',
    apply: (doc) =>
      eachObject(doc, (o) => {
        if (o['title'] === 'LipsyncResult') o['additionalProperties'] = false;
      }),
  },
  {
    why: 'point 2: input and webhook URLs follow the API\'s rule (an https URL with a host), not just "starts with https://"',
    apply: (doc) =>
      eachObject(doc, (o) => {
        if (o['pattern'] === '^https://') o['pattern'] = HTTPS_URL_PATTERN;
      }),
  },
  {
    why: "point 3: the estimate's body is the submissions' union ({model, input} of every kind, lip-sync's as a new component, or a tool body), no longer any object",
    async apply(doc) {
      const corrected = JSON.parse(
        await readFile(path.join(SNAPSHOT_DIR, 'corrections', 'estimate-body.json'), 'utf8'),
      ) as Json;
      at(doc, 'components', 'schemas')['EstimateLipsync'] = corrected['EstimateLipsync'];
      const body = at(doc, 'paths', '/api/v1/estimate', 'post', 'requestBody');
      at(body, 'content', 'application/json')['schema'] = corrected['schema'];
      body['description'] = (corrected['schema'] as Json)['description'];
    },
  },
  {
    why: "point 4: an upload's url is described as the link to submit (http:// in a one-host set-up without TLS, which the input patterns then take)",
    apply(doc) {
      const data = at(
        doc,
        'paths',
        '/api/v1/uploads',
        'post',
        'responses',
        '201',
        'content',
        'application/json',
        'schema',
        'properties',
        'data',
        'properties',
      );
      data['url'] = {
        type: 'string',
        format: 'uri',
        description:
          "a signed, expiring link under this gateway's public address, to submit as an input URL (http:// in a one-host set-up without TLS: the input URL patterns of this document then take it)",
      };
    },
  },
  {
    why:
      'issue 55, item 3: the error lists are read from the one code -> status table (src/gateway/errors.ts), in its order; ' +
      '429 gains TOO_MANY_STREAMS, which the live-events route answers; nothing else is added or dropped',
    apply: (doc) =>
      eachObject(doc, (o, key) => {
        if (typeof o['description'] !== 'string' || !o['description'].startsWith('Error: ')) return;
        const codes = o['description'].slice('Error: '.length).split(', ');
        if (codes.includes('RATE_LIMITED') && !codes.includes('TOO_MANY_STREAMS')) codes.push('TOO_MANY_STREAMS');
        const tableOrder = Object.keys(HTTP_ERROR_STATUS);
        codes.sort((a, b) => tableOrder.indexOf(a) - tableOrder.indexOf(b));
        o['description'] = `Error: ${codes.join(', ')}`;
        if (key === 'schema') at(o, 'properties', 'error', 'properties', 'code')['enum'] = codes;
      }),
  },
  {
    why: "issue 59, item 3: an upload into the results bucket answers 503 SERVICE_UNAVAILABLE when the bucket does not answer (every store-backed route's 503)",
    apply(doc) {
      at(doc, 'paths', '/api/v1/uploads', 'post', 'responses')['503'] = structuredClone(
        at(doc, 'paths', '/api/v1/estimate', 'post', 'responses', '503'),
      );
    },
  },
];

// The gateway, built with stand-ins for what the routes below never reach (no NATS, no store).

let app: GatewayApp;

const post = (url: string, body: unknown) => call(app, 'POST', url, body);

beforeAll(async () => {
  app = await standInGateway({
    env: {
      GATEWAY_SERVE_RESULTS: 'true',
      GATEWAY_UPLOADS: 'true',
      GATEWAY_LINK_SECRET: 'snapshot-secret-snapshot-secret-snapshot',
      GATEWAY_PUBLIC_URL: 'https://api.example.com',
    },
    resultsDir: dir,
    config,
    allowLocalPaths: true,
  });
});
afterAll(async () => app.close());

// ---------------------------------------------------------------------------------------------
// The corpus.

const https = (name: string) => `https://cdn.example.com/${name}`;

/** Bodies refused by validation, each kind's fields missing or invalid one after another in the spec's order. */
const REFUSED_JOBS: [string, unknown][] = [
  ['not an object', 'hello'],
  ['no model', { input: {} }],
  ['unknown model', { model: 'vendor-nothing', input: {} }],
  ['model not a string', { model: 7, input: {} }],
  ['id invalid', { id: 'a b', model: 'vendor-image-upscale', input: {} }],
  ['credits invalid', { model: 'vendor-image-upscale', credits: -1, input: {} }],
  ['input not an object', { model: 'vendor-image-upscale', input: [] }],
  ['image: nothing', { model: 'vendor-image-upscale', input: {} }],
  ['image: blank url', { model: 'vendor-image-upscale', input: { image_url: '  ', upscale_factor: 'x' } }],
  [
    'image: factor a number',
    { model: 'vendor-image-upscale', input: { image_url: https('a.png'), upscale_factor: 2 } },
  ],
  ['image: factor 3', { model: 'vendor-image-upscale', input: { image_url: https('a.png'), upscale_factor: '3' } }],
  ['video: nothing', { model: 'vendor-video-upscale', input: { upscale_factor: 'x', hdr: 'x' } }],
  [
    'video: factor',
    { model: 'vendor-video-upscale', input: { video_url: https('a.mp4'), upscale_factor: 'x', hdr: 'x' } },
  ],
  ['video: hdr', { model: 'vendor-video-upscale', input: { video_url: https('a.mp4'), hdr: 'bright' } }],
  ['lipsync: nothing', { model: 'vendor-lipsync-2', input: { sync_mode: 'x', active_speaker: 'x' } }],
  ['lipsync: audio', { model: 'vendor-lipsync-2-pro', input: { video_url: https('a.mp4'), sync_mode: 'x' } }],
  [
    'lipsync: sync mode',
    {
      model: 'vendor-lipsync-3',
      input: { video_url: https('a.mp4'), audio_url: https('a.mp3'), sync_mode: 'x', active_speaker: 'x' },
    },
  ],
  [
    'lipsync: active speaker',
    {
      model: 'vendor-lipsync-2',
      input: { video_url: https('a.mp4'), audio_url: https('a.mp3'), active_speaker: 'x', hdr: 'x' },
    },
  ],
  [
    'lipsync: hdr',
    { model: 'vendor-lipsync-2', input: { video_url: https('a.mp4'), audio_url: https('a.mp3'), hdr: 'x' } },
  ],
  ['music: custom mode not a boolean', { model: 'vendor-v5-generate-music', input: { custom_mode: 'yes' } }],
  ['music: instrumental not a boolean', { model: 'vendor-v5-generate-music', input: { instrumental: 'yes' } }],
  ['music: no prompt', { model: 'vendor-v5-generate-music', input: {} }],
  ['music: prompt too long', { model: 'vendor-v5-generate-music', input: { prompt: 'p'.repeat(501) } }],
  ['music: custom, nothing', { model: 'vendor-v5-generate-music', input: { custom_mode: true } }],
  [
    'music: style too long',
    { model: 'vendor-v5-generate-music', input: { custom_mode: true, style: 's'.repeat(1001) } },
  ],
  ['music: no title', { model: 'vendor-v5-generate-music', input: { custom_mode: true, style: 'jazz' } }],
  [
    'music: title too long',
    { model: 'vendor-v5-generate-music', input: { custom_mode: true, style: 'jazz', title: '🎵'.repeat(81) } },
  ],
  [
    'music: no lyrics',
    { model: 'vendor-v5-generate-music', input: { custom_mode: true, style: 'jazz', title: 'Rain' } },
  ],
  [
    'music: lyrics too long',
    {
      model: 'vendor-v5-generate-music',
      input: { custom_mode: true, style: 'jazz', title: 'Rain', lyrics: 'l'.repeat(5001) },
    },
  ],
  [
    'music: instrumental lyrics not a string',
    {
      model: 'vendor-v5-generate-music',
      input: { custom_mode: true, style: 'jazz', title: 'Rain', instrumental: true, lyrics: 3 },
    },
  ],
  [
    'music: vocal gender',
    {
      model: 'vendor-v5-generate-music',
      input: { custom_mode: true, style: 'jazz', title: 'Rain', lyrics: 'la', vocal_gender: 'x', negative_tags: 5 },
    },
  ],
  [
    'music: negative tags',
    {
      model: 'vendor-v5-generate-music',
      input: { custom_mode: true, style: 'jazz', title: 'Rain', lyrics: 'la', negative_tags: 'n'.repeat(1001) },
    },
  ],
];

/** The flat bodies of the tool endpoints, refused. */
const REFUSED_TOOL_BODIES: [string, string, unknown][] = [
  ['upscale-image', 'not an object', [1]],
  ['upscale-image', 'nothing', {}],
  ['upscale-image', 'factor', { image_url: https('a.png'), upscale_factor: 8 }],
  ['upscale-video', 'nothing', { upscale_factor: '9' }],
  ['upscale-video', 'factor', { video_url: https('a.mp4'), upscale_factor: '9' }],
  ['upscale-video', 'hdr', { video_url: https('a.mp4'), hdr: 1 }],
  ['lipsync', 'nothing', { model: 'x' }],
  ['lipsync', 'no audio', { video_url: https('a.mp4'), model: 'x' }],
  [
    'lipsync',
    'sync mode before model',
    { video_url: https('a.mp4'), audio_url: https('a.mp3'), sync_mode: 'x', model: 'x' },
  ],
  [
    'lipsync',
    'model',
    { video_url: https('a.mp4'), audio_url: https('a.mp3'), model: 'vendor-lipsync-9', active_speaker: 1 },
  ],
  [
    'lipsync',
    'active speaker',
    { video_url: https('a.mp4'), audio_url: https('a.mp3'), model: 'vendor-lipsync-3', active_speaker: 1 },
  ],
];

/** Jobs quoted on real media (local paths, as `media-worker quote` takes them): replies and refusals. */
function quotedJobs(): [string, unknown][] {
  const m = media;
  const jobs: [string, unknown][] = [];
  for (const photo of ['astronaut.png', 'chelsea.png', 'coffee.png']) {
    for (const factor of ['1', '2', '4'])
      jobs.push([
        `image ${photo} x${factor}`,
        { model: 'vendor-image-upscale', input: { image_url: path.join(PHOTOS, photo), upscale_factor: factor } },
      ]);
  }
  for (const factor of ['1', '2', '4'])
    jobs.push([
      `image 3500x2000 x${factor}`,
      { model: 'vendor-image-upscale', input: { image_url: m['large'], upscale_factor: factor } },
    ]);
  jobs.push(['image: a video', { model: 'vendor-image-upscale', input: { image_url: m['clip'] } }]);
  jobs.push([
    'image: a missing file',
    { model: 'vendor-image-upscale', input: { image_url: path.join(dir, 'missing.png') } },
  ]);
  for (const factor of ['1', '2', '4'])
    jobs.push([
      `video x${factor}`,
      { model: 'vendor-video-upscale', input: { video_url: m['clip'], upscale_factor: factor } },
    ]);
  jobs.push(['video with sound', { model: 'vendor-video-upscale', input: { video_url: m['clipWithSound'] } }]);
  jobs.push(['video: 61 s', { model: 'vendor-video-upscale', input: { video_url: m['long'] } }]);
  jobs.push(['video: WebM', { model: 'vendor-video-upscale', input: { video_url: m['webm'] } }]);
  jobs.push(['video: a photo', { model: 'vendor-video-upscale', input: { video_url: m['photo'] } }]);
  jobs.push(['video: audio only', { model: 'vendor-video-upscale', input: { video_url: m['tone'] } }]);
  for (const model of ['vendor-lipsync-2', 'vendor-lipsync-2-pro', 'vendor-lipsync-3']) {
    jobs.push([`lipsync ${model}`, { model, input: { video_url: m['clip'], audio_url: m['tone'] } }]);
  }
  for (const sync_mode of ['cut_off', 'loop', 'bounce', 'silence', 'remap']) {
    jobs.push([
      `lipsync ${sync_mode}, longer audio`,
      {
        model: 'vendor-lipsync-2',
        input: { video_url: m['webm'], audio_url: m['longTone'], sync_mode, active_speaker: true },
      },
    ]);
  }
  jobs.push([
    'lipsync: 61 s video',
    { model: 'vendor-lipsync-2', input: { video_url: m['long'], audio_url: m['tone'] } },
  ]);
  jobs.push([
    'lipsync: MKV-less video as audio',
    { model: 'vendor-lipsync-2', input: { video_url: m['clip'], audio_url: m['clip'] } },
  ]);
  jobs.push([
    'lipsync: a photo as video',
    { model: 'vendor-lipsync-2', input: { video_url: m['photo'], audio_url: m['tone'] } },
  ]);
  jobs.push([
    'lipsync: MOV video, its own sound',
    { model: 'vendor-lipsync-2-pro', input: { video_url: m['clipWithSound'], audio_url: m['clipWithSound'] } },
  ]);
  jobs.push(['music simple', { model: 'vendor-v5-generate-music', input: { prompt: 'a calm piano piece' } }]);
  jobs.push([
    'music custom',
    {
      model: 'vendor-v5-generate-music',
      input: {
        custom_mode: true,
        title: 'Rain',
        style: 'jazz',
        lyrics: '[Verse] la',
        vocal_gender: 'f',
        negative_tags: 'metal',
      },
    },
  ]);
  jobs.push([
    'music custom instrumental',
    {
      model: 'vendor-v5-generate-music',
      input: { custom_mode: true, title: 'Rain', style: 'jazz', instrumental: true },
    },
  ]);
  return jobs;
}

async function outcome(run: () => Promise<unknown>): Promise<unknown> {
  try {
    return { reply: await run() };
  } catch (err) {
    if (err instanceof JobError) return { refused: errorBody(err) };
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------

describe('the contract as it was before the kinds moved (issue 37)', () => {
  it('serves the same OpenAPI document, but for the deliberate corrections', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json() as Record<string, unknown>;
    const file = path.join(SNAPSHOT_DIR, 'openapi.json');
    if (UPDATE) {
      await mkdir(path.join(SNAPSHOT_DIR, 'corrections'), { recursive: true });
      await writeFile(file, `${JSON.stringify(doc, null, 2)}\n`);
      const estimate = {
        EstimateLipsync: at(doc, 'components', 'schemas', 'EstimateLipsync'),
        schema: at(doc, 'paths', '/api/v1/estimate', 'post', 'requestBody', 'content', 'application/json', 'schema'),
      };
      await writeFile(
        path.join(SNAPSHOT_DIR, 'corrections', 'estimate-body.json'),
        `${JSON.stringify(estimate, null, 2)}\n`,
      );
    }
    const expected = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    for (const correction of CORRECTIONS) await correction.apply(expected);
    expect(doc).toEqual(expected);
  });

  it('derives the same JSON Schemas of the protocol (docs/schemas/)', async () => {
    const schemas = wireJsonSchemas();
    for (const [name, schema] of Object.entries(schemas)) await compare(path.join('schemas', name), schema);
    const committed = await Promise.all(
      Object.keys(schemas).map((name) =>
        readFile(path.join(import.meta.dirname, '..', '..', 'docs', 'schemas', name), 'utf8'),
      ),
    );
    expect(committed.map((text) => JSON.parse(text))).toEqual(Object.values(schemas));
  });

  it('prints the same settings reference (config --reference)', async () => {
    await compare('config-reference.md', `${allSettingsReference()}\n`);
  });

  it("refuses the same bodies with the same codes and messages, in the spec's order", async () => {
    const parsed = Object.fromEntries(
      REFUSED_JOBS.map(([name, body]) => {
        try {
          return [name, { accepted: parseJob(body) }];
        } catch (err) {
          if (err instanceof JobError) return [name, errorBody(err)];
          throw err;
        }
      }),
    );
    await compare('refused-jobs.json', parsed);
  });

  it('answers the same HTTP errors on every submission endpoint and on estimate', async () => {
    const replies: Record<string, unknown> = {};
    for (const [name, body] of REFUSED_JOBS) {
      const unified =
        typeof body === 'object' && body !== null && 'model' in body
          ? { model: body.model, input: (body as { input?: unknown }).input }
          : body;
      replies[`generate: ${name}`] = await post('/api/v1/generate', unified);
      replies[`estimate: ${name}`] = await post('/api/v1/estimate', unified);
    }
    for (const [tool, name, body] of REFUSED_TOOL_BODIES) {
      replies[`${tool}: ${name}`] = await post(`/api/v1/tools/${tool}`, body);
      replies[`estimate ${tool}: ${name}`] = await post('/api/v1/estimate', body);
    }
    await compare('http-errors.json', replies);
  });

  it('quotes the corpus on real media with the same replies and refusals', async () => {
    const replies: Record<string, unknown> = {};
    for (const [name, body] of quotedJobs()) {
      replies[name] = await outcome(() =>
        quoteOnly(parseJob(body), config, {
          taskId: 'snapshot',
          allowLocalPaths: true,
          timeLimitsMs: {
            image: 3_600_000,
            video: 1_800_000,
            lipsync: 240_000,
            music: 600_000,
            'music-video': 1_800_000,
          },
        }),
      );
    }
    await compare('quotes.json', stable(replies));
  }, 120_000);

  it('estimates over HTTP as it did (the quote, the echo, the balance)', async () => {
    const replies: Record<string, unknown> = {};
    replies['image tool body'] = await post('/api/v1/estimate', { image_url: media['photo'], upscale_factor: '4' });
    replies['video tool body'] = await post('/api/v1/estimate', { video_url: media['clip'] });
    replies['lipsync tool body'] = await post('/api/v1/estimate', {
      video_url: media['clip'],
      audio_url: media['tone'],
      model: 'vendor-lipsync-3',
    });
    replies['music unified'] = await post('/api/v1/estimate', {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'rain' },
    });
    await compare('http-estimates.json', stable(replies));
  }, 60_000);
});
