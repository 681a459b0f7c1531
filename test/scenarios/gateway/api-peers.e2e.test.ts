/**
 * What peers' APIs offer beside submitting and polling (issue 33): cancel over HTTP, with the
 * shipped `media-worker serve` and `media-worker gateway` (dist/) over a real nats-server under the
 * shipped per-role users and real HTTP (./e2e-harness.ts). Music jobs wait in the stream (no music
 * slot), so a pending task stays pending until it is cancelled; image jobs run for real (a small
 * PNG) to have a completed task.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { ffmpeg } from '../../media/helpers.js';
import type { ControlPlane } from '../../worker/helpers/jetstream.js';
import { useGatewayE2e, type Account, type Reply } from './e2e-harness.js';
import { accountsCommand, type RunningProcess } from './processes.js';

const e2e = useGatewayE2e({
  name: 'media-gateway-peers-',
  async files(dir) {
    const files: Record<string, Buffer> = {
      '/small.png': await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(40, 27).png().toBuffer(),
    };
    // 8 s of frames whose own audio runs 10 s (lip-sync bills the frames), and the job's audio.
    await ffmpeg([
      ...[
        '-f',
        'lavfi',
        '-i',
        'testsrc2=size=32x32:rate=5:duration=8',
        '-f',
        'lavfi',
        '-i',
        'sine=frequency=440:sample_rate=22050:duration=10',
      ],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', path.join(dir, 'v8a10.mp4')],
    ]);
    files['/v8a10.mp4'] = await readFile(path.join(dir, 'v8a10.mp4'));
    await ffmpeg(['-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', path.join(dir, 'a.mp3')]);
    files['/a.mp3'] = await readFile(path.join(dir, 'a.mp3'));
    return files;
  },
});
const { api, newAccount } = e2e;
let cp: ControlPlane;
let mediaUrl: string;
let gateway: RunningProcess & { url: string };
let env: NodeJS.ProcessEnv;
beforeAll(() => {
  ({ cp, mediaUrl, gateway, env } = e2e);
});

const credits = async (account: Account): Promise<number> =>
  (await api('GET', '/api/v1/balance', account.key)).body.data?.['credits'] as number;
const music = (account: Account) =>
  api('POST', '/api/v1/generate', account.key, { model: 'vendor-v5-generate-music', input: { prompt: 'a tune' } });

describe('POST /api/v1/tasks/{id}/cancel', () => {
  it("cancels a pending task of the caller's account through a worker: refunded once, and a second cancel is 409", async () => {
    const owner = await newAccount(100);
    const other = await newAccount(100);
    const submitted = await music(owner);
    expect(submitted.status).toBe(200);
    const id = submitted.body.data?.['id'] as string;
    expect(await credits(owner)).toBe(85);

    // Another account's task is not there for it; nothing changes.
    const foreign = await api('POST', `/api/v1/tasks/${id}/cancel`, other.key);
    expect(foreign).toMatchObject({ status: 404, body: { error: { code: 'TASK_NOT_FOUND' } } });
    expect((await api('GET', `/api/v1/tasks/${id}`, owner.key)).body.data?.['status']).toBe('pending');

    const cancelled = await api('POST', `/api/v1/tasks/${id}/cancel`, owner.key);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({
      id,
      status: 'failed',
      creditsUsed: 0,
      creditsRefunded: 15,
      error: { code: 'CANCELLED' },
    });
    expect(await credits(owner)).toBe(100);
    // The worker's one CANCELLED event, and the job left the queue without running.
    expect(await cp.eventsOf(id)).toMatchObject([{ status: 'failed', refund: true, error: { code: 'CANCELLED' } }]);

    const again = await api('POST', `/api/v1/tasks/${id}/cancel`, owner.key);
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'TASK_NOT_PENDING' } } });
    expect(await credits(owner)).toBe(100);
    const ledger = (await accountsCommand(['show', owner.id, '--entries', '100'], env)) as {
      credits: number;
      entries: { type: string }[];
    };
    expect(ledger.entries.filter((e) => e.type === 'refund')).toHaveLength(1);
  }, 60_000);

  it('a completed task answers 409 and keeps its charge; an unknown id 404', async () => {
    const owner = await newAccount(100);
    const submitted = await api('POST', '/api/v1/tools/upscale-image', owner.key, {
      image_url: `${mediaUrl}/small.png`,
    });
    expect(submitted.status).toBe(200);
    const id = submitted.body.data?.['id'] as string;
    expect((await e2e.settled(owner, id)).body.data?.['status']).toBe('completed');
    const late = await api('POST', `/api/v1/tasks/${id}/cancel`, owner.key);
    expect(late).toMatchObject({ status: 409, body: { error: { code: 'TASK_NOT_PENDING' } } });
    expect(late.body.error?.message).toContain('completed');
    expect(await credits(owner)).toBe(80);
    expect((await api('POST', '/api/v1/tasks/t_nothing_here/cancel', owner.key)).status).toBe(404);
  }, 120_000);
});

describe('POST /api/v1/estimate', () => {
  it('prices any submission body through the same quote, charging nothing and creating no task', async () => {
    const owner = await newAccount(100);
    // The unified shape takes the lip-sync models too; the bill is the video stream's 8 s, not its own audio's 10 s.
    const lip = await api('POST', '/api/v1/estimate', owner.key, {
      model: 'vendor-lipsync-2',
      input: { video_url: `${mediaUrl}/v8a10.mp4`, audio_url: `${mediaUrl}/a.mp3` },
    });
    expect(lip.status).toBe(200);
    expect(lip.body.data).toMatchObject({
      model: 'vendor-lipsync-2',
      creditsUsed: 80,
      duration: 8,
      input: { billed_seconds: 8, credits_per_second: 10 },
      balance: 100,
      sufficient: true,
    });
    // A tool endpoint's body, told by its fields: the same echo as /tools/upscale-image.
    const image = await api('POST', '/api/v1/estimate', owner.key, {
      image_url: `${mediaUrl}/small.png`,
      upscale_factor: '4',
    });
    expect(image.body.data).toMatchObject({
      model: 'vendor-image-upscale',
      creditsUsed: 20,
      input: { detected_dimensions: '40×27', output_tier: '24mp', upscale_factor: '4' },
    });
    const tool = await api('POST', '/api/v1/estimate', owner.key, {
      video_url: `${mediaUrl}/v8a10.mp4`,
      audio_url: `${mediaUrl}/a.mp3`,
      model: 'vendor-lipsync-2-pro',
    });
    expect(tool.body.error).toBeUndefined();
    expect(tool.body.data).toMatchObject({
      model: 'vendor-lipsync-2-pro',
      creditsUsed: 160,
      duration: 8,
      balance: 100,
      sufficient: false,
    });
    const song = await api('POST', '/api/v1/estimate', owner.key, {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'a tune' },
    });
    expect(song.body.data).toMatchObject({ creditsUsed: 15 });

    expect(await credits(owner)).toBe(100);
    expect((await api('GET', '/api/v1/tasks', owner.key)).body.data?.['tasks']).toEqual([]);
  }, 60_000);

  it("refuses what the submission refuses, with the submission's codes", async () => {
    const owner = await newAccount(100);
    expect((await api('POST', '/api/v1/estimate', owner.key, { model: 'nope', input: {} })).body.error?.code).toBe(
      'UNKNOWN_MODEL',
    );
    expect(
      (await api('POST', '/api/v1/estimate', owner.key, { model: 'vendor-v5-generate-music', input: {} })).body.error
        ?.code,
    ).toBe('MISSING_PROMPT');
    const missing = await api('POST', '/api/v1/estimate', owner.key, { image_url: `${mediaUrl}/missing.png` });
    expect(missing).toMatchObject({ status: 422, body: { error: { code: 'FETCH_FAILED' } } });
    const secret = await api('POST', '/api/v1/estimate', owner.key, { image_url: 'file:///etc/passwd' });
    expect(secret.status).toBe(400);
    // As at submission, a balance below the least such a job costs is refused before anything is fetched.
    const poor = await newAccount(10);
    expect((await api('POST', '/api/v1/estimate', poor.key, { image_url: `${mediaUrl}/small.png` })).status).toBe(402);
    expect(await credits(owner)).toBe(100);
  }, 60_000);
});

describe('GET /api/v1/usage', () => {
  it("lists the account's movements in pages, with task ids, models and signed credits that add up to the balance", async () => {
    const owner = await newAccount(100);
    const other = await newAccount(50);
    await accountsCommand(['topup', owner.id, '7'], env);
    const song = (await music(owner)).body.data?.['id'] as string;
    expect((await api('POST', `/api/v1/tasks/${song}/cancel`, owner.key)).status).toBe(200);
    const image = await api('POST', '/api/v1/tools/upscale-image', owner.key, { image_url: `${mediaUrl}/small.png` });
    const imageId = image.body.data?.['id'] as string;

    const movements: Record<string, unknown>[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Reply = await api(
        'GET',
        `/api/v1/usage?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`,
        owner.key,
      );
      expect(page.status).toBe(200);
      movements.push(...(page.body.data?.['movements'] as Record<string, unknown>[]));
      cursor = page.body.data?.['nextCursor'] as string | null;
      pages += 1;
    } while (cursor !== null && pages < 10);
    expect(pages).toBe(3);
    expect(movements).toMatchObject([
      { type: 'open', credits: 100, balance: 100 },
      { type: 'topup', credits: 7, balance: 107 },
      { type: 'debit', credits: -15, balance: 92, taskId: song, model: 'vendor-v5-generate-music' },
      {
        type: 'refund',
        credits: 15,
        balance: 107,
        taskId: song,
        model: 'vendor-v5-generate-music',
        reason: 'CANCELLED',
      },
      { type: 'debit', credits: -20, balance: 87, taskId: imageId, model: 'vendor-image-upscale' },
    ]);
    const sum = movements.reduce((total, m) => total + (m['credits'] as number), 0);
    expect(sum).toBe(await credits(owner));
    expect(sum).toBe(87);

    // A range: nothing after now, nothing before the account; the other account sees only its own.
    const later = await api(
      'GET',
      `/api/v1/usage?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
      owner.key,
    );
    expect(later.body.data).toMatchObject({ movements: [], nextCursor: null });
    const since = movements[2]!['at'] as string;
    const ranged = await api(
      'GET',
      `/api/v1/usage?from=${encodeURIComponent(since)}&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
      owner.key,
    );
    expect((ranged.body.data?.['movements'] as { type: string }[]).map((m) => m.type)).toEqual([
      'debit',
      'refund',
      'debit',
    ]);
    expect((await api('GET', '/api/v1/usage', other.key)).body.data).toMatchObject({
      accountId: other.id,
      movements: [{ type: 'open', credits: 50 }],
      nextCursor: null,
    });
    for (const bad of ['from=yesterday', 'limit=0', 'cursor=t_abc']) {
      expect(await api('GET', `/api/v1/usage?${bad}`, owner.key)).toMatchObject({
        status: 400,
        body: { error: { code: 'INVALID_QUERY' } },
      });
    }
  }, 60_000);
});

describe('methods', () => {
  it('a method such as QUERY on a known path is 405 with Allow, with or without a body', async () => {
    const owner = await newAccount(10);
    for (const body of [undefined, '{"model":"vendor-v5-generate-music"}']) {
      const res = await fetch(`${gateway.url}/api/v1/generate`, {
        method: 'QUERY',
        headers: {
          authorization: `Bearer ${owner.key}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
      });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('METHOD_NOT_ALLOWED');
    }
  });
});
