/**
 * A fake sync.so-compatible lip-sync provider on 127.0.0.1, a real HTTP server that follows the
 * documented v2 API: `x-api-key`; POST /v2/generate (JSON with input URLs, or the multipart upload
 * with `video` and `audio` files) honouring `Idempotency-Key` (the same key and body answer the same
 * generation; another body with that key is refused); GET /v2/generate/{id}; errors as
 * `{statusCode, message, errorCode}`. A COMPLETED generation's output is made with real ffmpeg from
 * the inputs it fetched (the input video muxed with the job's audio, as the sync mode asks) and
 * served from /outputs/.
 *
 * Each test scripts the failures: answers forced onto the next POSTs (401, 402, 429 with
 * Retry-After, 5xx, an answer lost after the generation was made), unsupported models, a final
 * FAILED or REJECTED, a generation held in PROCESSING until released, an output URL that 404s, an
 * output that is not a video or not an MP4, a status answer about another generation, and an
 * output URL that redirects to a private address. An account out of credit answers every POST
 * with 402, and, as a provider may, every other call too.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveFfmpeg, runProcess } from '../../src/media/index.js';

export type FakeOutcome =
  | 'complete'
  | 'fail'
  | 'reject'
  | 'hold'
  | 'output-404'
  | 'output-not-video'
  | 'output-matroska'
  | 'output-redirect-private'
  | 'other-generation';

export interface FakeGeneration {
  id: string;
  key: string | undefined;
  model: string;
  options: Record<string, unknown>;
  /** The body's fingerprint: the same key must come with the same body. */
  fingerprint: string;
  status: 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED' | 'REJECTED';
  polls: number;
  upload: boolean;
  outputUrl?: string;
  error?: string;
  errorCode?: string;
}

export interface ForcedAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Make the generation first, then answer this (a response lost on the way). */
  afterCreating?: boolean;
}

export interface FakeSync {
  url: string;
  key: string;
  /** Every generation made, in order. */
  generations: FakeGeneration[];
  /** POST /v2/generate requests received, with their Idempotency-Key. */
  posts: { key: string | undefined; answered: number }[];
  /** Answers replay of an existing key gave. */
  replays: number;
  /** Key checks and polls. */
  gets: string[];
  /** Requests refused for their x-api-key (401), any route. */
  refusedKeys: number;
  /** What the next generations do. */
  outcome: FakeOutcome;
  /** Polls a generation answers PROCESSING before it settles. */
  pollsBeforeDone: number;
  /** Retry-After (seconds) sent with answers of a generation still running, when set. */
  pollRetryAfter?: string;
  /** Answers forced onto the next POSTs, first first. */
  forced: ForcedAnswer[];
  /** Provider models it serves. */
  models: Set<string>;
  /**
   * The account out of credit: 402 to each new generation (`generations`), or to every call with
   * the key, the key check and polls included (`every call`); undefined: it can pay.
   */
  outOfCredit: 'generations' | 'every call' | undefined;
  /** Ends the hold: held generations complete at their next poll. */
  release(): void;
  /** Holds again (the default until `release`). */
  hold(): void;
  close(): Promise<void>;
}

const PROVIDER_MODELS = ['lipsync-2', 'lipsync-2-pro', 'sync-3'];
const OUT_OF_CREDIT = 'Insufficient credits: add credits to your account to generate';

export async function startFakeSync(options: { key?: string } = {}): Promise<FakeSync> {
  const key = options.key ?? 'test-sync-key';
  const work = await mkdtemp(path.join(tmpdir(), 'fake-sync-'));
  const outputs = new Map<string, string>();
  const byKey = new Map<string, FakeGeneration>();
  const inputs = new Map<string, { video: string; audio: string }>();
  let held = true;
  const sockets = new Set<Socket>();

  const fake: FakeSync = {
    url: '',
    key,
    generations: [],
    posts: [],
    replays: 0,
    gets: [],
    refusedKeys: 0,
    outcome: 'complete',
    pollsBeforeDone: 1,
    forced: [],
    models: new Set(PROVIDER_MODELS),
    outOfCredit: undefined,
    release: () => {
      held = false;
    },
    hold: () => {
      held = true;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(work, { recursive: true, force: true });
    },
  };

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };
  const error = (
    res: ServerResponse,
    status: number,
    message: string,
    errorCode?: string,
    headers?: Record<string, string>,
  ): void =>
    json(res, status, { statusCode: status, message, ...(errorCode === undefined ? {} : { errorCode }) }, headers);

  const view = (g: FakeGeneration): Record<string, unknown> => ({
    id: g.id,
    createdAt: '2026-01-01T00:00:00.000Z',
    status: g.status,
    model: g.model,
    input: [],
    options: g.options,
    outputUrl: g.outputUrl ?? null,
    error: g.error ?? null,
    ...(g.errorCode === undefined ? {} : { error_code: g.errorCode }),
  });

  /** The output, as the outcome says: made from the inputs with ffmpeg, or one of the broken kinds. */
  const settle = async (g: FakeGeneration): Promise<void> => {
    const outcome = fake.outcome;
    if (outcome === 'fail')
      Object.assign(g, {
        status: 'FAILED',
        error: 'No face was found in the video',
        errorCode: 'generation_face_not_found',
      });
    else if (outcome === 'reject')
      Object.assign(g, {
        status: 'REJECTED',
        error: 'The input was rejected by moderation',
        errorCode: 'generation_rejected',
      });
    else {
      g.status = 'COMPLETED';
      if (outcome === 'output-404') g.outputUrl = `${fake.url}/outputs/missing.mp4`;
      else if (outcome === 'output-not-video') {
        const file = path.join(work, `${g.id}.mp4`);
        await writeFile(file, '<html>not a video</html>\n'.repeat(20));
        outputs.set(`${g.id}.mp4`, file);
        g.outputUrl = `${fake.url}/outputs/${g.id}.mp4`;
      } else if (outcome === 'output-redirect-private') g.outputUrl = `${fake.url}/redirect/${g.id}.mp4`;
      else if (outcome === 'other-generation') g.id = `${g.id}-other`;
      else {
        const file = await render(
          g,
          inputs.get(g.id) as { video: string; audio: string },
          work,
          outcome === 'output-matroska' ? 'matroska' : 'mp4',
        );
        outputs.set(`${g.id}.mp4`, file);
        g.outputUrl = `${fake.url}/outputs/${g.id}.mp4`;
      }
    }
  };

  const handle = async (req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname.startsWith('/outputs/')) {
      const file = outputs.get(url.pathname.slice('/outputs/'.length));
      if (file === undefined) return void res.writeHead(404).end();
      return void res.writeHead(200, { 'content-type': 'video/mp4' }).end(await readFile(file));
    }
    if (req.method === 'GET' && url.pathname.startsWith('/redirect/')) {
      // A private address the worker must not be sent to (the metadata service's).
      return void res.writeHead(302, { location: 'https://169.254.169.254/latest/meta-data/' }).end();
    }
    if (req.headers['x-api-key'] !== key) {
      fake.refusedKeys += 1;
      return error(res, 401, 'Unauthorized', 'unauthorized');
    }
    if (fake.outOfCredit === 'every call') {
      if (req.method === 'GET') fake.gets.push(url.pathname.replace(/^\/v2\/generate\//, ''));
      return error(res, 402, OUT_OF_CREDIT, 'payment_required');
    }
    if (req.method === 'POST' && url.pathname === '/v2/generate') return generate(req, body, res);
    const match = /^\/v2\/generate\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && match !== null) {
      const id = decodeURIComponent(match[1] as string);
      fake.gets.push(id);
      const g = fake.generations.find((x) => x.id === id);
      if (g === undefined) return error(res, 404, 'Generation not found', 'generation_not_found');
      if (g.status === 'PENDING' || g.status === 'PROCESSING') {
        g.polls += 1;
        if (fake.outcome === 'hold' && held) g.status = 'PROCESSING';
        else if (g.polls > fake.pollsBeforeDone) await settle(g);
        else g.status = 'PROCESSING';
      }
      const running = g.status === 'PENDING' || g.status === 'PROCESSING';
      return json(
        res,
        200,
        view(g),
        running && fake.pollRetryAfter !== undefined ? { 'retry-after': fake.pollRetryAfter } : {},
      );
    }
    return error(res, 404, 'Not found');
  };

  const generate = async (req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> => {
    const idemKey = typeof req.headers['idempotency-key'] === 'string' ? req.headers['idempotency-key'] : undefined;
    const post = { key: idemKey, answered: 0 };
    fake.posts.push(post);
    const answer = (status: number, payload: unknown, headers: Record<string, string> = {}): void => {
      post.answered = status;
      json(res, status, payload, headers);
    };
    if (idemKey !== undefined && !/^[A-Za-z0-9._~-]{1,128}$/.test(idemKey)) {
      post.answered = 400;
      return error(res, 400, 'Malformed Idempotency-Key', 'INVALID_IDEMPOTENCY_KEY');
    }
    if (fake.outOfCredit === 'generations') {
      post.answered = 402;
      return error(res, 402, OUT_OF_CREDIT, 'payment_required');
    }
    const forced = fake.forced[0]?.afterCreating === true ? undefined : fake.forced.shift();
    if (forced !== undefined)
      return answer(
        forced.status,
        forced.body ?? { statusCode: forced.status, message: `forced ${forced.status}` },
        forced.headers,
      );

    const contentType = req.headers['content-type'] ?? '';
    let model: string;
    let options: Record<string, unknown>;
    let video: string;
    let audio: string;
    let upload = false;
    let fingerprint: string;
    if (contentType.startsWith('multipart/form-data')) {
      upload = true;
      const form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
      const v = form.get('video');
      const a = form.get('audio');
      if (!(v instanceof Blob) || !(a instanceof Blob))
        return answer(400, {
          statusCode: 400,
          message: 'video and audio files are required',
          errorCode: 'generation_video_missing',
        });
      model = String(form.get('model') ?? '');
      options = JSON.parse(String(form.get('options') ?? '{}')) as Record<string, unknown>;
      const vBytes = Buffer.from(await v.arrayBuffer());
      const aBytes = Buffer.from(await a.arrayBuffer());
      fingerprint = hash(model, JSON.stringify(options), vBytes, aBytes);
      video = path.join(work, `upload-${fingerprint.slice(0, 12)}-video`);
      audio = path.join(work, `upload-${fingerprint.slice(0, 12)}-audio`);
      await writeFile(video, vBytes);
      await writeFile(audio, aBytes);
    } else {
      let parsed: { model?: string; input?: { type: string; url: string }[]; options?: Record<string, unknown> };
      try {
        parsed = JSON.parse(body.toString('utf8')) as typeof parsed;
      } catch {
        return answer(400, {
          statusCode: 400,
          message: 'Body is not JSON',
          errorCode: 'generation_input_validation_failed',
        });
      }
      model = parsed.model ?? '';
      options = parsed.options ?? {};
      const v = parsed.input?.find((i) => i.type === 'video')?.url;
      const a = parsed.input?.find((i) => i.type === 'audio')?.url;
      if (v === undefined || a === undefined)
        return answer(400, {
          statusCode: 400,
          message: 'One video and one audio input are required',
          errorCode: 'generation_input_validation_failed',
        });
      fingerprint = hash(body.toString('utf8'));
      video = v;
      audio = a;
    }
    if (!fake.models.has(model)) {
      return answer(400, {
        statusCode: 400,
        message: 'The requested model is not supported for this operation.',
        errorCode: 'generation_unsupported_model',
      });
    }
    if (idemKey !== undefined) {
      const known = byKey.get(idemKey);
      if (known !== undefined) {
        if (known.fingerprint !== fingerprint)
          return answer(422, {
            statusCode: 422,
            message: 'Idempotency-Key reused with another request',
            errorCode: 'IDEMPOTENCY_KEY_REUSED',
          });
        fake.replays += 1;
        return answer(200, view(known), { 'idempotent-replayed': 'true' });
      }
    }
    const g: FakeGeneration = {
      id: `gen-${fake.generations.length + 1}`,
      key: idemKey,
      model,
      options,
      fingerprint,
      status: 'PENDING',
      polls: 0,
      upload,
    };
    // Inputs are fetched when the generation is made, as the provider would.
    inputs.set(g.id, {
      video: await fetched(video, path.join(work, `${g.id}-video`)),
      audio: await fetched(audio, path.join(work, `${g.id}-audio`)),
    });
    fake.generations.push(g);
    if (idemKey !== undefined) byKey.set(idemKey, g);
    const lost = fake.forced[0]?.afterCreating === true ? fake.forced.shift() : undefined;
    if (lost !== undefined)
      return answer(
        lost.status,
        lost.body ?? { statusCode: lost.status, message: `forced ${lost.status}` },
        lost.headers,
      );
    return answer(201, view(g), fake.pollRetryAfter === undefined ? {} : { 'retry-after': fake.pollRetryAfter });
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      handle(req, Buffer.concat(chunks), res).catch((err: unknown) => {
        if (!res.headersSent) error(res, 500, (err as Error).message);
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}

function hash(...parts: (string | Buffer)[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex');
}

/** An input URL fetched (or an uploaded file's path kept). */
async function fetched(source: string, file: string): Promise<string> {
  if (!/^https?:/.test(source)) return source;
  const res = await fetch(source);
  if (!res.ok) throw new Error(`fetching ${source}: HTTP ${res.status}`);
  await writeFile(file, Buffer.from(await res.arrayBuffer()));
  return file;
}

/**
 * The output a real provider would give in length and streams: the input video with the job's
 * audio, as long as the sync mode makes it (cut_off: the shorter; loop, bounce, remap: the audio's,
 * the video looped; silence: the longer, the audio padded).
 */
async function render(
  g: FakeGeneration,
  inputs: { video: string; audio: string },
  work: string,
  muxer: 'mp4' | 'matroska',
): Promise<string> {
  const mode = String(g.options.sync_mode ?? 'cut_off');
  const out = path.join(work, `${g.id}-out.mp4`);
  const loops = mode === 'loop' || mode === 'bounce' || mode === 'remap';
  const args = [
    '-v',
    'error',
    '-y',
    ...(loops ? ['-stream_loop', '-1'] : []),
    '-i',
    inputs.video,
    '-i',
    inputs.audio,
    '-map',
    '0:v:0',
    '-map',
    '1:a:0',
  ];
  if (mode === 'silence') args.push('-af', 'apad');
  args.push('-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac');
  // Looped video and padded audio are endless: the other stream ends the output.
  args.push('-shortest', '-f', muxer, out);
  await runProcess(resolveFfmpeg(), args);
  return out;
}
