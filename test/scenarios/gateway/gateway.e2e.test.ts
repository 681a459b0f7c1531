/**
 * `media-worker gateway` end to end, as shipped (dist/): real HTTP, a real nats-server, a real
 * `serve` process doing the work and answering quotes, accounts made with `media-worker accounts`.
 * Each endpoint's success and error statuses and bodies; the spec's reference lip-sync charges; an
 * image upscale polled to completion and its result fetched from the gateway; a failure after
 * acceptance refunded once; 402 and 401; 100 concurrent submissions; a gateway killed and restarted
 * while tasks run. All under the shipped per-role NATS configuration (test/helpers/role-nats.ts):
 * `provision` and `accounts` as operator, `serve` as worker host `host1`, `gateway` as gateway,
 * each with its own reply inbox, so a permission the code needs and deploy/nats lacks fails here.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { ffmpeg } from '../../media/helpers.js';
import { waitFor, type ControlPlane } from '../../worker/helpers/jetstream.js';
import type { TestNatsServer } from '../../worker/helpers/nats-server.js';
import type { RoleNats } from '../../helpers/role-nats.js';
import { useGatewayE2e, type Account, type Reply } from './e2e-harness.js';
import { accountsCommand, type RunningProcess } from './processes.js';

/** Requests for /flaky.png: the first (the quote) gets a PNG, later ones (the job) garbage. */
let flakyRequests = 0;
let png: Buffer;

const LIPSYNC_SECONDS = [3, 5, 10, 15, 15.04, 20, 30];

const e2e = useGatewayE2e({
  name: 'media-gateway-e2e-',
  async files(dir) {
    png = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer();
    const files: Record<string, Buffer> = { '/small.png': png, '/notes.txt': Buffer.from('not an image\n') };
    for (const s of LIPSYNC_SECONDS) {
      const out = path.join(dir, `v${s}.mp4`);
      await ffmpeg([
        '-f',
        'lavfi',
        '-i',
        'color=c=gray:s=16x16:r=25',
        '-t',
        String(s),
        '-c:v',
        'libx264',
        '-pix_fmt',
        'yuv420p',
        out,
      ]);
      files[`/v${s}.mp4`] = await readFile(out);
    }
    await ffmpeg(['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', path.join(dir, 'a.mp3')]);
    files['/a.mp3'] = await readFile(path.join(dir, 'a.mp3'));
    return files;
  },
  route(req, res) {
    if (req.url !== '/flaky.png') return false;
    flakyRequests += 1;
    res.writeHead(200).end(flakyRequests === 1 ? png : Buffer.from('garbage, not a PNG'));
    return true;
  },
  env: {
    GATEWAY_UPLOADS: 'true',
    GATEWAY_UPLOAD_MAX_BYTES: '200000',
    // The race below is about the ledger: every submission is let through to its quote.
    GATEWAY_QUOTES_PER_ACCOUNT: '100',
  },
});
const { api, newAccount, settled } = e2e;
let roles: RoleNats;
let nats: TestNatsServer;
let cp: ControlPlane;
let mediaUrl: string;
let serve: RunningProcess;
let gateway: RunningProcess & { url: string };
let env: NodeJS.ProcessEnv;
beforeAll(() => {
  ({ roles, cp, mediaUrl, serve, gateway, env } = e2e);
  nats = roles.server;
});

async function balance(account: Account): Promise<number> {
  const reply = await api('GET', '/api/v1/balance', account.key);
  expect(reply.status).toBe(200);
  return reply.body.data?.['credits'] as number;
}

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe('authentication', () => {
  it('answers 401 with the error envelope for a missing key, another scheme and an unknown key', async () => {
    for (const headers of [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer mwk_unknown' },
    ] as Record<string, string>[]) {
      const res = await fetch(`${gateway.url}/api/v1/tasks/t_x`, { headers });
      expect(res.status).toBe(401);
      const body = (await res.json()) as Reply['body'];
      expect(body).toEqual({
        success: false,
        error: { code: 'UNAUTHORIZED', message: expect.stringMatching(/^Expected /) },
      });
    }
  });

  it('serves /healthz, /readyz, /metrics and the OpenAPI document without a key', async () => {
    expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${gateway.url}/readyz`)).json()).toEqual({ status: 'ready' });
    expect(await (await fetch(`${gateway.url}/metrics`)).text()).toContain(
      'media_gateway_http_request_duration_seconds',
    );
    const doc = (await (await fetch(`${gateway.url}/api/v1/openapi.json`)).json()) as {
      openapi: string;
      paths: Record<string, unknown>;
    };
    expect(doc.openapi).toBe('3.0.3');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/generate',
        '/api/v1/tools/lipsync',
        '/api/v1/tools/upscale-image',
        '/api/v1/tools/upscale-video',
        '/api/v1/tasks/{id}',
        '/api/v1/tasks',
        '/api/v1/balance',
        '/api/v1/uploads',
      ]),
    );
  });
});

describe('image upscale', () => {
  it('submits through the tool endpoint, polls to completed and fetches the result from the gateway', async () => {
    const account = await newAccount(100);
    const submitted = await api('POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: `${mediaUrl}/small.png`,
      upscale_factor: '2',
    });
    expect(submitted.status).toBe(200);
    expect(submitted.body).toEqual({
      success: true,
      data: {
        id: expect.stringMatching(/^t_[a-z0-9]+$/),
        model: 'vendor-image-upscale',
        status: 'pending',
        creditsUsed: 20,
        creditsRemaining: 80,
        createdAt: expect.stringMatching(ISO_MS),
        input: {
          image_url: `${mediaUrl}/small.png`,
          upscale_factor: '2',
          detected_dimensions: '40×27',
          output_tier: '24mp',
        },
      },
    });
    const id = submitted.body.data?.id ?? '';
    const done = await settled(account, id);
    expect(done.status).toBe(200);
    expect(done.body.data).toEqual({
      id,
      model: 'vendor-image-upscale',
      status: 'completed',
      result: {
        url: expect.stringContaining(`/results/image/${id}/`),
        type: 'image',
        width: 80,
        height: 54,
        format: 'png',
      },
      creditsUsed: 20,
      createdAt: submitted.body.data?.['createdAt'],
    });
    const url = (done.body.data?.['result'] as { url: string }).url;
    const whole = await fetch(url);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('image/png');
    const meta = await sharp(Buffer.from(await whole.arrayBuffer())).metadata();
    expect([meta.width, meta.height]).toEqual([80, 54]);
    const part = await fetch(url, { headers: { range: 'bytes=0-7' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).readUInt32BE(0)).toBe(0x89504e47);
    expect(await balance(account)).toBe(80);
  });

  it('answers the unified endpoint with the short task object, and its validation errors with the spec codes', async () => {
    const account = await newAccount(100);
    const ok = await api('POST', '/api/v1/generate', account.key, {
      model: 'vendor-image-upscale',
      input: { image_url: `${mediaUrl}/small.png` },
    });
    expect(ok.status).toBe(200);
    expect(Object.keys(ok.body.data ?? {})).toEqual([
      'id',
      'model',
      'status',
      'creditsUsed',
      'creditsRemaining',
      'createdAt',
    ]);
    const cases: [unknown, number, string][] = [
      [{ model: 'vendor-image-upscale', input: {} }, 400, 'MISSING_IMAGE_URL'],
      [
        { model: 'vendor-image-upscale', input: { image_url: `${mediaUrl}/small.png`, upscale_factor: '8' } },
        400,
        'INVALID_UPSCALE_FACTOR',
      ],
      [{ model: 'nope' }, 400, 'UNKNOWN_MODEL'],
      [{ model: 'vendor-lipsync-2', input: {} }, 400, 'UNKNOWN_MODEL'],
      [{ model: 'vendor-v5-generate-music', input: {} }, 400, 'MISSING_PROMPT'],
      [{ model: 'vendor-image-upscale', input: { image_url: `${mediaUrl}/notes.txt` } }, 422, 'PROBE_FAILED'],
      [{ model: 'vendor-image-upscale', input: { image_url: `${mediaUrl}/missing.png` } }, 422, 'FETCH_FAILED'],
      ['{not json', 400, 'INVALID_JOB'],
      [[1, 2], 400, 'INVALID_JOB'],
    ];
    for (const [body, status, code] of cases) {
      const reply = await api('POST', '/api/v1/generate', account.key, body);
      expect({ body, status: reply.status, code: reply.body.error?.code, success: reply.body.success }).toEqual({
        body,
        status,
        code,
        success: false,
      });
      expect(reply.body.error?.message).toMatch(/\S/);
    }
    const text = await api('POST', '/api/v1/generate', account.key, undefined, { 'content-type': 'text/plain' });
    expect([text.status, text.body.error?.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const huge = await api('POST', '/api/v1/generate', account.key, {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'x'.repeat(2 * 1024 * 1024) },
    });
    expect([huge.status, huge.body.error?.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const nowhere = await api('GET', '/api/v1/nowhere', account.key);
    expect([nowhere.status, nowhere.body.error?.code]).toEqual([404, 'NOT_FOUND']);
    expect(await balance(account)).toBe(80);
  });

  it("answers the video tool's errors with the spec codes", async () => {
    const account = await newAccount(100);
    expect((await api('POST', '/api/v1/tools/upscale-video', account.key, {})).body.error?.code).toBe(
      'MISSING_VIDEO_URL',
    );
    const bad = await api('POST', '/api/v1/tools/upscale-video', account.key, {
      video_url: `${mediaUrl}/v3.mp4`,
      upscale_factor: '3',
    });
    expect([bad.status, bad.body.error?.code]).toEqual([400, 'INVALID_UPSCALE_FACTOR']);
    const ok = await api('POST', '/api/v1/tools/upscale-video', account.key, {
      video_url: `${mediaUrl}/v3.mp4`,
      upscale_factor: '4',
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({
      model: 'vendor-video-upscale',
      creditsUsed: 84,
      creditsRemaining: 16,
      input: {
        video_url: `${mediaUrl}/v3.mp4`,
        upscale_factor: '4',
        detected_duration: '3s',
        billed_seconds: 3,
        credits_per_second: 28,
      },
    });
  });

  it('answers 402 INSUFFICIENT_CREDITS and leaves the balance untouched', async () => {
    const account = await newAccount(10);
    const reply = await api('POST', '/api/v1/tools/upscale-image', account.key, { image_url: `${mediaUrl}/small.png` });
    expect(reply).toEqual({
      status: 402,
      body: { success: false, error: { code: 'INSUFFICIENT_CREDITS', message: expect.stringContaining('20') } },
    });
    expect(await balance(account)).toBe(10);
    expect((await api('GET', '/api/v1/tasks', account.key)).body.data).toEqual({ tasks: [], nextCursor: null });
    expect(await (await fetch(`${gateway.url}/metrics`)).text()).toMatch(
      /media_gateway_submissions_total\{model="vendor-image-upscale",outcome="INSUFFICIENT_CREDITS"\} [1-9]/,
    );
  });

  it('refunds a job that fails after acceptance once; a second failure event for the task changes nothing', async () => {
    const account = await newAccount(50);
    flakyRequests = 0;
    const submitted = await api('POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: `${mediaUrl}/flaky.png`,
    });
    expect(submitted.status).toBe(200);
    expect(submitted.body.data?.['creditsRemaining']).toBe(30);
    const id = submitted.body.data?.id ?? '';
    const failed = await settled(account, id);
    expect(failed.body.data).toMatchObject({
      id,
      status: 'failed',
      error: { code: 'PROBE_FAILED' },
      creditsRefunded: 20,
    });
    expect(await balance(account)).toBe(50);

    // Another failure event for the same task from the same host (the first claimer, so believed):
    // the events stream keeps one per host and task, so make room for it, then let the gateway's
    // consumer receive it.
    const stored = await cp.jsm.streams.getMessage('MEDIA_EVENTS', { last_by_subj: `media.events.*.${id}` });
    await cp.jsm.streams.deleteMessage('MEDIA_EVENTS', stored!.seq);
    const h = natsHeaders();
    h.set('Nats-Msg-Id', `${id}:again`);
    await jetstream(cp.nc).publish(stored!.subject, JSON.stringify(stored!.json()), { headers: h });
    await waitFor('the second event to be handled', async () => {
      const text = await (await fetch(`${gateway.url}/metrics`)).text();
      return /media_gateway_events_total\{result="already settled"\} [1-9]/.test(text);
    });
    expect(await balance(account)).toBe(50);
    expect((await api('GET', `/api/v1/tasks/${id}`, account.key)).body.data).toMatchObject({
      status: 'failed',
      creditsRefunded: 20,
    });
  });
});

describe('tasks', () => {
  it("answers an unknown id and another account's task with the same 404", async () => {
    const owner = await newAccount(100);
    const other = await newAccount(100);
    const submitted = await api('POST', '/api/v1/generate', owner.key, {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'a tune' },
    });
    const id = submitted.body.data?.id ?? '';
    expect((await api('GET', `/api/v1/tasks/${id}`, owner.key)).body.data).toEqual({
      id,
      model: 'vendor-v5-generate-music',
      status: 'pending',
      creditsUsed: 15,
      createdAt: submitted.body.data?.['createdAt'],
    });
    const foreign = await api('GET', `/api/v1/tasks/${id}`, other.key);
    const unknown = await api('GET', '/api/v1/tasks/t_doesnotexist', other.key);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error?.code).toBe('TASK_NOT_FOUND');
    expect(unknown.status).toBe(404);
    expect(foreign.body.error?.message.replace(id, 'ID')).toBe(
      unknown.body.error?.message.replace('t_doesnotexist', 'ID'),
    );
  });

  it("shows the worker's latest progress on a pending task", async () => {
    const account = await newAccount(100);
    const id =
      (
        await api('POST', '/api/v1/generate', account.key, {
          model: 'vendor-v5-generate-music',
          input: { prompt: 'slow' },
        })
      ).body.data?.id ?? '';
    expect((await api('GET', `/api/v1/tasks/${id}`, account.key)).body.data).not.toHaveProperty('progress');
    // What a worker sends on core NATS while the job runs (docs/protocol.md, "Progress"), with a worker host's user.
    const message = {
      id,
      model: 'vendor-v5-generate-music',
      stage: 'generate',
      done: 3,
      total: 4,
      percent: 75,
      etaSeconds: 40,
      at: new Date().toISOString(),
    };
    const worker = await roles.connectAs('worker-host1');
    // Sent again until a poll shows it: core NATS keeps nothing for a subscription not yet made.
    const shown = async (sent: typeof message) =>
      waitFor('the progress to show', async () => {
        worker.publish(`media.progress.${id}`, JSON.stringify(sent));
        const data = (await api('GET', `/api/v1/tasks/${id}`, account.key)).body.data;
        return (data?.['progress'] as { percent?: number } | undefined)?.percent === sent.percent ? data : undefined;
      });
    try {
      expect(await shown(message)).toMatchObject({
        status: 'pending',
        progress: { stage: 'generate', percent: 75, etaSeconds: 40, at: message.at },
      });
      // The worker's ETA is a claim: one out of bounds is dropped, the rest of its message shown.
      const later = {
        ...message,
        done: 3.5,
        percent: 87.5,
        etaSeconds: 1e9,
        at: new Date(Date.parse(message.at) + 1000).toISOString(),
      };
      expect((await shown(later))['progress']).toEqual({ stage: 'generate', percent: 87.5, at: later.at });
    } finally {
      await worker.close();
    }
  });

  it("lists an account's history newest first, one page at a time", async () => {
    const account = await newAccount(100);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (
          await api('POST', '/api/v1/generate', account.key, {
            model: 'vendor-v5-generate-music',
            input: { prompt: `song ${i}` },
          })
        ).body.data?.id ?? '',
      );
    const first = await api('GET', '/api/v1/tasks?limit=2', account.key);
    expect((first.body.data?.['tasks'] as { id: string }[]).map((t) => t.id)).toEqual([ids[2], ids[1]]);
    const cursor = first.body.data?.['nextCursor'] as string;
    const second = await api('GET', `/api/v1/tasks?limit=2&cursor=${cursor}`, account.key);
    expect(second.body.data).toEqual({
      tasks: [expect.objectContaining({ id: ids[0], status: 'pending' })],
      nextCursor: null,
    });
    const bad = await api('GET', '/api/v1/tasks?limit=0', account.key);
    expect([bad.status, bad.body.error?.code]).toEqual([400, 'INVALID_QUERY']);
  });
});

describe('lip-sync', () => {
  it("answers 202 with pollUrl, the measured duration and the spec's reference charges for the three models", async () => {
    const account = await newAccount(100_000);
    const expected: Record<string, number[]> = {
      'vendor-lipsync-2': [50, 50, 100, 150, 160, 200, 300],
      'vendor-lipsync-2-pro': [100, 100, 200, 300, 320, 400, 600],
      'vendor-lipsync-3': [150, 150, 300, 450, 480, 600, 900],
    };
    let remaining = 100_000;
    for (const [model, charges] of Object.entries(expected)) {
      for (const [i, seconds] of LIPSYNC_SECONDS.entries()) {
        const reply = await api('POST', '/api/v1/tools/lipsync', account.key, {
          video_url: `${mediaUrl}/v${seconds}.mp4`,
          audio_url: `${mediaUrl}/a.mp3`,
          model,
        });
        remaining -= charges[i]!;
        expect(reply.status).toBe(202);
        const id = reply.body.data?.id ?? '';
        expect(reply.body.data).toEqual({
          id,
          model,
          status: 'pending',
          creditsUsed: charges[i],
          creditsRemaining: remaining,
          createdAt: expect.stringMatching(ISO_MS),
          pollUrl: `/api/v1/tasks/${id}`,
          duration: seconds,
        });
      }
    }
    expect(await balance(account)).toBe(remaining);
  }, 120_000);

  it('answers lip-sync errors with the spec codes', async () => {
    const account = await newAccount(1000);
    const cases: [unknown, number, string][] = [
      [{ audio_url: `${mediaUrl}/a.mp3` }, 400, 'MISSING_VIDEO_URL'],
      [{ video_url: `${mediaUrl}/v3.mp4` }, 400, 'MISSING_AUDIO_URL'],
      [
        { video_url: `${mediaUrl}/v3.mp4`, audio_url: `${mediaUrl}/a.mp3`, sync_mode: 'stretch' },
        400,
        'INVALID_SYNC_MODE',
      ],
      [
        { video_url: `${mediaUrl}/v3.mp4`, audio_url: `${mediaUrl}/a.mp3`, model: 'vendor-lipsync-9' },
        400,
        'INVALID_MODEL',
      ],
      [
        { video_url: `${mediaUrl}/v3.mp4`, audio_url: `${mediaUrl}/a.mp3`, active_speaker: 'true' },
        400,
        'INVALID_ACTIVE_SPEAKER',
      ],
      [{ video_url: `${mediaUrl}/notes.txt`, audio_url: `${mediaUrl}/a.mp3` }, 422, 'PROBE_FAILED'],
    ];
    for (const [body, status, code] of cases) {
      const reply = await api('POST', '/api/v1/tools/lipsync', account.key, body);
      expect({ body, status: reply.status, code: reply.body.error?.code }).toEqual({ body, status, code });
    }
    const poor = await newAccount(10);
    const refused = await api('POST', '/api/v1/tools/lipsync', poor.key, {
      video_url: `${mediaUrl}/v3.mp4`,
      audio_url: `${mediaUrl}/a.mp3`,
    });
    expect([refused.status, refused.body.error?.code]).toEqual([402, 'INSUFFICIENT_CREDITS']);
    expect(await balance(poor)).toBe(10);
  });
});

describe('uploads', () => {
  it('stores an image upload by its content and serves it; refuses other content and oversized bodies', async () => {
    const account = await newAccount(100);
    const png = await readFile(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png'));
    const small = await sharp(png).resize(30, 20).png().toBuffer();
    const res = await fetch(`${gateway.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/octet-stream' },
      body: small,
    });
    expect(res.status).toBe(201);
    const data = ((await res.json()) as Reply['body']).data as { url: string; format: string; size: number };
    expect(data).toEqual({
      url: expect.stringMatching(
        new RegExp(`/results/uploads/${account.id}/u_[a-z0-9]+\\.png\\?expires=\\d+&sig=[\\w-]+$`),
      ),
      format: 'png',
      size: small.length,
    });
    expect(Buffer.from(await (await fetch(data.url)).arrayBuffer()).equals(small)).toBe(true);
    // The uploaded URL is an input like any other.
    const quoted = await api('POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: data.url,
      upscale_factor: '4',
    });
    expect(quoted.body.data?.['input']).toMatchObject({ detected_dimensions: '30×20' });

    const text = await fetch(`${gateway.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'image/png' },
      body: 'hello',
    });
    expect([text.status, ((await text.json()) as Reply['body']).error?.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const big = await fetch(`${gateway.url}/api/v1/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'image/png' },
      body: png,
    });
    expect([big.status, ((await big.json()) as Reply['body']).error?.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  });
});

describe('media-worker accounts', () => {
  it('tops up an account and refuses an unknown account or a bad amount with exit 1', async () => {
    const account = await newAccount(5);
    expect(await accountsCommand(['topup', account.id, '7'], env)).toEqual({ accountId: account.id, credits: 12 });
    expect(await balance(account)).toBe(12);
    // A second key of the same account sees the same balance and tasks.
    const second = (await accountsCommand(['add-key', account.id], env)) as { apiKey: string };
    expect(second.apiKey).not.toBe(account.key);
    expect(await balance({ id: account.id, key: second.apiKey })).toBe(12);
    for (const args of [
      ['topup', 'acct_nope', '5'],
      ['topup', account.id, '-3'],
      ['create', '--name', 'x', '--credits', 'many'],
    ]) {
      const failed = await accountsCommand(args, env).then(
        () => undefined,
        (err: { code: number; stderr: string }) => err,
      );
      expect(failed?.code).toBe(1);
      expect(failed?.stderr).toMatch(/^media-worker: Expected /);
    }
  });
});

describe('credits under load', () => {
  it('accepts exactly 10 of 100 concurrent submissions against a balance for 10', async () => {
    const account = await newAccount(150);
    const replies = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        api('POST', '/api/v1/generate', account.key, {
          model: 'vendor-v5-generate-music',
          input: { prompt: `race ${i}` },
        }),
      ),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(90);
    expect(await balance(account)).toBe(0);
    const shown = (await accountsCommand(['show', account.id, '--entries', '100'], env)) as {
      credits: number;
      entries: { type: string }[];
    };
    expect(shown.credits).toBe(0);
    expect(shown.entries.filter((e) => e.type === 'debit')).toHaveLength(10);
    const listed = await api('GET', '/api/v1/tasks?limit=100', account.key);
    expect((listed.body.data?.['tasks'] as unknown[]).length).toBe(10);
  }, 120_000);
});

describe('a gateway killed while tasks run', () => {
  it('loses no task and no credit: after a restart every task completes and the balance is exact', async () => {
    const account = await newAccount(100);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const reply = await api('POST', '/api/v1/tools/upscale-image', account.key, {
        image_url: `${mediaUrl}/small.png`,
      });
      expect(reply.status).toBe(200);
      ids.push(reply.body.data?.id ?? '');
    }
    // And one that will fail: its refund too must survive the gateway's death.
    flakyRequests = 0;
    const failing = await api('POST', '/api/v1/tools/upscale-image', account.key, {
      image_url: `${mediaUrl}/flaky.png`,
    });
    expect(failing.body.data?.['creditsRemaining']).toBe(20);
    const failingId = failing.body.data?.id ?? '';
    await gateway.kill('SIGKILL');
    // The worker goes on and publishes the events while no gateway is there to consume them.
    await waitFor(
      'the events of the four tasks',
      async () =>
        (await Promise.all([...ids, failingId].map((id) => cp.eventsOf(id)))).every((e) => e.length === 1)
          ? true
          : undefined,
      90_000,
    );
    gateway = await e2e.restartGateway();
    for (const id of ids)
      expect((await settled(account, id)).body.data).toMatchObject({
        id,
        status: 'completed',
        creditsUsed: 20,
      });
    expect((await settled(account, failingId)).body.data).toMatchObject({
      status: 'failed',
      creditsRefunded: 20,
    });
    expect(await balance(account)).toBe(40);
    const shown = (await accountsCommand(['show', account.id], env)) as { entries: { type: string }[] };
    expect(shown.entries.map((e) => e.type)).toEqual(['open', 'debit', 'debit', 'debit', 'debit', 'refund']);
  }, 180_000);

  it('is not ready while NATS is down, and serves again once it is back', async () => {
    if (!nats.owned) return; // NATS_URL given: that server cannot be stopped
    const account = await newAccount(100);
    await nats.stopProcess();
    const down = await waitFor('the gateway to report not ready', async () => {
      const res = await fetch(`${gateway.url}/readyz`);
      return res.status === 503 ? ((await res.json()) as { reason: string }) : undefined;
    });
    expect(down.reason).toMatch(/NATS/);
    await nats.startProcess();
    await waitFor(
      'the gateway to be ready',
      async () => ((await fetch(`${gateway.url}/readyz`)).status === 200 ? true : undefined),
      30_000,
    );
    const reply = await waitFor(
      'a submission to be accepted',
      async () => {
        const r = await api('POST', '/api/v1/generate', account.key, {
          model: 'vendor-v5-generate-music',
          input: { prompt: 'after the restart' },
        });
        return r.status === 200 ? r : undefined;
      },
      30_000,
      500,
    );
    expect(reply.body.data).toMatchObject({ status: 'pending', creditsRemaining: 85 });
  }, 90_000);

  it('answers 503 SERVICE_UNAVAILABLE and charges nothing when no worker answers the quote', async () => {
    const account = await newAccount(100);
    expect(await serve.kill('SIGTERM')).toBe(0);
    const reply = await api('POST', '/api/v1/tools/upscale-image', account.key, { image_url: `${mediaUrl}/small.png` });
    expect([reply.status, reply.body.error?.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
    expect(await balance(account)).toBe(100);
  });

  it('finishes requests in progress and exits 0 on SIGTERM', async () => {
    expect(await gateway.kill('SIGTERM')).toBe(0);
  });
});
