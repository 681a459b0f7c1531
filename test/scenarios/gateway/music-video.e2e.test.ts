/**
 * `vendor-music-video` end to end through the gateway, with the shipped `serve` and `gateway`
 * (test/scenarios/gateway/e2e-harness.ts): a 12.4-second song and its cover served by the test's media host,
 * submitted on POST /api/v1/generate, priced from the decoded audio (13 started seconds x 2 = 26
 * credits), rendered by the worker and fetched from the gateway, then checked with ffprobe. Also the
 * spec's order of checks over HTTP, damaged audio refused at the quote, the estimate, discovery.
 */
import { execFile } from 'node:child_process';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { ffmpeg } from '../../media/helpers.js';
import { useGatewayE2e, type Account } from './e2e-harness.js';

const run = promisify(execFile);
const MODEL = 'vendor-music-video';
const FRAME = 1 / 30;

const e2e = useGatewayE2e({
  name: 'media-music-video-e2e-',
  async files(dir) {
    // 12.4 s: a tone, two seconds of silence (the visualiser lies flat), the tone again.
    const song = path.join(dir, 'song.mp3');
    await ffmpeg([
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=330:duration=12.4:sample_rate=44100',
      '-af',
      "volume=enable='between(t,5,7)':volume=0",
      '-c:a',
      'libmp3lame',
      '-b:a',
      '128k',
      song,
    ]);
    const cover = await sharp({ create: { width: 300, height: 200, channels: 3, background: '#c04060' } })
      .jpeg()
      .toBuffer();
    await writeFile(
      path.join(dir, 'damaged.mp3'),
      Buffer.concat([(await readFile(song)).subarray(0, 4000), Buffer.alloc(20_000, 0x5a)]),
    );
    return {
      '/song.mp3': await readFile(song),
      '/cover.jpg': cover,
      '/damaged.mp3': await readFile(path.join(dir, 'damaged.mp3')),
      '/notes.txt': Buffer.from('not audio\n'),
    };
  },
  // The harness's worker serves images only; this one serves music videos too.
  env: { WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0,music-video=1' },
});
const { api, newAccount, settled } = e2e;
let song: string;
let cover: string;
beforeAll(() => {
  song = `${e2e.mediaUrl}/song.mp3`;
  cover = `${e2e.mediaUrl}/cover.jpg`;
});

async function balance(account: Account): Promise<number> {
  return (await api('GET', '/api/v1/balance', account.key)).body.data?.['credits'] as number;
}

describe('vendor-music-video through the gateway', () => {
  it('is announced by the worker (discovery) as a ready kind with its model', async () => {
    const caps = await waitFor(
      'the worker to announce the music video ready',
      async () => {
        const reply = await e2e.cp.nc.request('media.capabilities', '', { timeout: 5000 });
        const body = reply.json() as { kinds: Record<string, { ready: boolean; slots: number; models: string[] }> };
        return body.kinds['music-video']?.ready === true ? body : undefined;
      },
      60_000,
      500,
    );
    expect(caps.kinds['music-video']).toMatchObject({ ready: true, slots: 1, models: [MODEL] });
  });

  it('prices a 12.4-second song at 26 credits, renders it, and bills what ran', async () => {
    const account = await newAccount(100);
    const estimate = await api('POST', '/api/v1/estimate', account.key, {
      model: MODEL,
      input: { audio_url: song, image_url: cover },
    });
    expect(estimate.status).toBe(200);
    expect(estimate.body.data).toMatchObject({ model: MODEL, creditsUsed: 26 });

    const submitted = await api('POST', '/api/v1/generate', account.key, {
      model: MODEL,
      input: { audio_url: song, image_url: cover, title: 'Twelve' },
    });
    expect([200, 202]).toContain(submitted.status);
    expect(submitted.body.data).toMatchObject({
      model: MODEL,
      status: 'pending',
      creditsUsed: 26,
      creditsRemaining: 74,
    });
    const id = submitted.body.data?.id ?? '';
    const done = await settled(account, id);
    expect(done.body.data).toMatchObject({
      id,
      model: MODEL,
      status: 'completed',
      creditsUsed: 26,
      result: { url: expect.stringContaining(`/results/music-video/${id}/`), type: 'video', width: 1920, height: 1080 },
    });
    expect(await balance(account)).toBe(74);

    const result = done.body.data?.['result'] as { url: string; duration: number };
    expect(Math.abs(result.duration - 12.4)).toBeLessThan(0.05);
    const res = await fetch(result.url);
    expect(res.status).toBe(200);
    const file = path.join(e2e.dir, `${id}.mp4`);
    await writeFile(file, Buffer.from(await res.arrayBuffer()));
    // Under the bit rate the runtime's disk need assumes (src/kinds/music-video/runtime.ts: 20 Mbit/s).
    expect((await stat(file)).size / result.duration).toBeLessThan(20_000_000 / 8);
    const { stdout } = await run('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'stream=codec_type,codec_name,pix_fmt,width,height,avg_frame_rate,duration',
      '-of',
      'json',
      file,
    ]);
    const streams = (JSON.parse(stdout) as { streams: Record<string, string | number>[] }).streams;
    const video = streams.find((s) => s['codec_type'] === 'video');
    const audio = streams.find((s) => s['codec_type'] === 'audio');
    expect(video).toMatchObject({
      codec_name: 'h264',
      pix_fmt: 'yuv420p',
      width: 1920,
      height: 1080,
      avg_frame_rate: '30/1',
    });
    expect(audio).toMatchObject({ codec_name: 'aac' });
    expect(Math.abs(Number(video?.['duration']) - result.duration)).toBeLessThanOrEqual(FRAME + 1e-6);
  }, 180_000);

  it('checks the fields in the order of docs/music-video.md, charging nothing', async () => {
    const account = await newAccount(100);
    const cases: [Record<string, unknown>, string][] = [
      [{}, 'MISSING_AUDIO_URL'],
      [{ image_url: cover, style: 'bars' }, 'MISSING_AUDIO_URL'],
      [{ audio_url: song, title: 7 }, 'MISSING_IMAGE_URL'],
      [{ audio_url: song, image_url: cover, title: 7, style: 'bars' }, 'INVALID_TITLE'],
      [{ audio_url: song, image_url: cover, title: 'x'.repeat(81), style: 'bars' }, 'TITLE_TOO_LONG'],
      [{ audio_url: song, image_url: cover, style: 'bars', aspect_ratio: '4:3' }, 'INVALID_STYLE'],
      [{ audio_url: song, image_url: cover, aspect_ratio: '4:3' }, 'INVALID_ASPECT_RATIO'],
    ];
    for (const [input, code] of cases) {
      const reply = await api('POST', '/api/v1/generate', account.key, { model: MODEL, input });
      expect([reply.status, reply.body.error?.code]).toEqual([400, code]);
    }
    const damaged = await api('POST', '/api/v1/generate', account.key, {
      model: MODEL,
      input: { audio_url: `${e2e.mediaUrl}/damaged.mp3`, image_url: cover },
    });
    expect([damaged.status, damaged.body.error?.code]).toEqual([422, 'PROBE_FAILED']);
    const lying = await api('POST', '/api/v1/generate', account.key, {
      model: MODEL,
      input: { audio_url: `${e2e.mediaUrl}/notes.txt`, image_url: cover },
    });
    expect([lying.status, lying.body.error?.code]).toEqual([422, 'PROBE_FAILED']);
    const notCover = await api('POST', '/api/v1/generate', account.key, {
      model: MODEL,
      input: { audio_url: song, image_url: `${e2e.mediaUrl}/song.mp3` },
    });
    expect([notCover.status, notCover.body.error?.code]).toEqual([422, 'PROBE_FAILED']);
    expect(await balance(account)).toBe(100);
  }, 120_000);

  it('refuses a balance under the price with INSUFFICIENT_CREDITS', async () => {
    const account = await newAccount(25);
    const reply = await api('POST', '/api/v1/generate', account.key, {
      model: MODEL,
      input: { audio_url: song, image_url: cover },
    });
    expect([reply.status, reply.body.error?.code]).toEqual([402, 'INSUFFICIENT_CREDITS']);
    expect(await balance(account)).toBe(25);
  }, 60_000);
});
