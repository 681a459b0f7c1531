/**
 * Live task events (GET /api/v1/tasks/{id}/events) against the shipped gateway and worker on real
 * NATS: an image upscale followed by its owner (progress with an ETA that falls, then the terminal
 * task as a poll shows it), refused to another account, resumed with Last-Event-ID; the per-account and per-gateway
 * bounds; heartbeats; and `media-worker tasks watch` and examples/python/follow_task.py following
 * a task (the Python one skipped where python3 is missing).
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { serverSentEvents, type ServerSentEvent } from '../../../src/cli/event-stream.js';
import { BUNDLED_PHOTOS_DIR, PACKAGE_ROOT } from '../../../src/paths.js';
import { useGatewayE2e } from './e2e-harness.js';
import { CLI } from './processes.js';
import { hasPython } from '../../helpers/python.js';

const e2e = useGatewayE2e({
  name: 'media-task-events-',
  async files() {
    // Large enough for the upscale to report progress while a stream is open (one tile).
    const photo = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(256, 192).png().toBuffer();
    // A strip of the same photo in four tiles of about a second each: steps for the ETA to fall over.
    const strip = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png'))
      .resize(1600)
      .extract({ left: 0, top: 400, width: 1600, height: 64 })
      .png()
      .toBuffer();
    return { '/photo.png': photo, '/strip.png': strip };
  },
  env: {
    // What is followed is the events, not the network: the compact one (about 15x cheaper per pixel
    // than the default x4plus) under a tile budget that gives it 512-pixel tiles, as x4plus gets.
    MEDIA_WORKER_SR_MODELS: 'image=realesrgan-x4fast',
    MEDIA_WORKER_TILE_RAM_MB: '240',
    WORKER_PROGRESS_INTERVAL_MS: '0',
    GATEWAY_EVENT_STREAMS_PER_ACCOUNT: '2',
    GATEWAY_EVENT_STREAMS: '3',
    GATEWAY_EVENT_HEARTBEAT_MS: '300',
  },
});

const PYTHON_EXAMPLE = path.join(PACKAGE_ROOT, 'examples', 'python', 'follow_task.py');

interface Opened {
  status: number;
  res: Response;
  abort: AbortController;
}

async function openEvents(id: string, key: string, lastEventId?: string): Promise<Opened> {
  const abort = new AbortController();
  const res = await fetch(`${e2e.gateway.url}/api/v1/tasks/${id}/events`, {
    headers: { authorization: `Bearer ${key}`, ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }) },
    signal: abort.signal,
  });
  return { status: res.status, res, abort };
}

async function allEvents(opened: Opened): Promise<ServerSentEvent[]> {
  expect(opened.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const events: ServerSentEvent[] = [];
  for await (const event of serverSentEvents(opened.res.body!)) events.push(event);
  return events;
}

async function submitUpscale(key: string, file = '/photo.png'): Promise<string> {
  const reply = await e2e.api('POST', '/api/v1/tools/upscale-image', key, {
    image_url: `${e2e.mediaUrl}${file}`,
    upscale_factor: '2',
  });
  expect(reply.status).toBe(200);
  return reply.body.data?.id ?? '';
}

/** `<at ms>-<seq>` as a pair, to check the order of progress ids. */
function position(id: string | undefined): [number, number] {
  const match = /^(\d+)-(\d+)$/.exec(id ?? '');
  expect(match, `a progress event id, received ${id}`).not.toBeNull();
  return [Number(match![1]), Number(match![2])];
}

function expectIncreasing(ids: (string | undefined)[]): void {
  const positions = ids.map(position);
  for (let i = 1; i < positions.length; i++) {
    const [a, b] = [positions[i - 1]!, positions[i]!];
    expect(b[0] > a[0] || (b[0] === a[0] && b[1] > a[1]), `${ids[i]} after ${ids[i - 1]}`).toBe(true);
  }
}

interface Step {
  stage: string;
  done?: number;
  total?: number;
  unit?: string;
  etaSeconds?: number;
}

/**
 * The ETA of an image upscale's steps: none while fetching and before a tile is done (the tiling
 * reports 0 first), then whole seconds once a tile is done, falling to 0 when the last one is. Its
 * values depend on the machine: only their presence and order are checked.
 */
function expectFallingEta(steps: Step[]): void {
  for (const step of steps.filter((s) => s.unit !== 'tiles' || s.done === 0))
    expect(step.etaSeconds, JSON.stringify(step)).toBeUndefined();
  const estimated = steps.filter((s) => s.unit === 'tiles' && s.done! > 0);
  expect(estimated.length, 'tiles done while the stream was open').toBeGreaterThan(1);
  for (const step of estimated)
    expect(Number.isInteger(step.etaSeconds) && step.etaSeconds! >= 0, JSON.stringify(step)).toBe(true);
  const [first, last] = [estimated[0]!, estimated.at(-1)!];
  expect(last.done).toBe(last.total);
  expect(last.etaSeconds).toBe(0);
  expect(first.done).toBeLessThan(first.total!);
  expect(first.etaSeconds).toBeGreaterThan(0);
}

describe('live task events', () => {
  it('follows an image upscale for its owner: progress events with a falling ETA, then the task as a poll shows it, then the end; another account gets 404', async () => {
    const owner = await e2e.newAccount(1000);
    const other = await e2e.newAccount(1000);
    const id = await submitUpscale(owner.key, '/strip.png');

    const refused = await e2e.api('GET', `/api/v1/tasks/${id}/events`, other.key);
    expect(refused.status).toBe(404);
    expect(refused.body.error?.code).toBe('TASK_NOT_FOUND');
    expect((await e2e.api('GET', `/api/v1/tasks/${id}/events`, null)).status).toBe(401);

    const opened = await openEvents(id, owner.key);
    expect(opened.status).toBe(200);
    const events = await allEvents(opened);
    const progress = events.filter((e) => e.event === 'progress');
    expect(progress.length).toBeGreaterThan(0);
    expectIncreasing(progress.map((e) => e.id));
    for (const e of progress)
      expect(JSON.parse(e.data)).toMatchObject({ id, stage: expect.any(String), at: expect.any(String) });
    expect(progress.some((e) => (JSON.parse(e.data) as { unit?: string }).unit === 'tiles')).toBe(true);
    expectFallingEta(progress.map((e) => JSON.parse(e.data) as Step));

    const last = events.at(-1)!;
    expect(last.event).toBe('completed');
    expect(last.id).toBe('end');
    expect(events.filter((e) => e.id === 'end')).toHaveLength(1);
    const polled = await e2e.api('GET', `/api/v1/tasks/${id}`, owner.key);
    expect(JSON.parse(last.data)).toEqual(polled.body.data);

    // Settled: the terminal event at once, and the end.
    const again = await allEvents(await openEvents(id, owner.key));
    expect(again.map((e) => [e.id, e.event])).toEqual([['end', 'completed']]);
    expect(JSON.parse(again[0]!.data)).toEqual(polled.body.data);
  }, 180_000);

  it('resumes after Last-Event-ID with only the later events; after the terminal id there is nothing (204)', async () => {
    const owner = await e2e.newAccount(1000);
    const id = await submitUpscale(owner.key);
    const first = await openEvents(id, owner.key);
    const iterator = serverSentEvents(first.res.body!)[Symbol.asyncIterator]();
    const seen = (await iterator.next()).value as ServerSentEvent;
    expect(seen.event).toBe('progress');
    first.abort.abort();

    const resumed = await allEvents(await openEvents(id, owner.key, seen.id));
    expect(resumed.at(-1)?.id).toBe('end');
    const later = resumed.filter((e) => e.event === 'progress');
    expectIncreasing([seen.id, ...later.map((e) => e.id)]);

    const nothing = await openEvents(id, owner.key, 'end');
    expect(nothing.status).toBe(204);
    expect(await nothing.res.text()).toBe('');
  }, 180_000);

  it('bounds open streams per account and per gateway (429 TOO_MANY_STREAMS) and keeps idle ones alive with heartbeats', async () => {
    // Music jobs are priced but not run here: their tasks stay pending.
    const submitMusic = async (key: string) =>
      (
        await e2e.api('POST', '/api/v1/generate', key, {
          model: 'vendor-v5-generate-music',
          input: { prompt: 'a tune' },
        })
      ).body.data?.id ?? '';
    const [a, b, c] = [await e2e.newAccount(1000), await e2e.newAccount(1000), await e2e.newAccount(1000)];
    const [taskA, taskB, taskC] = [await submitMusic(a.key), await submitMusic(b.key), await submitMusic(c.key)];
    const open: Opened[] = [await openEvents(taskA, a.key), await openEvents(taskA, a.key)];
    try {
      expect(open.map((o) => o.status)).toEqual([200, 200]);
      const overAccount = await e2e.api('GET', `/api/v1/tasks/${taskA}/events`, a.key);
      expect(overAccount.status).toBe(429);
      expect(overAccount.body.error?.code).toBe('TOO_MANY_STREAMS');
      expect(overAccount.body.error?.message).toMatch(/GATEWAY_EVENT_STREAMS_PER_ACCOUNT/);

      open.push(await openEvents(taskB, b.key));
      expect(open[2]!.status).toBe(200);
      const overGateway = await e2e.api('GET', `/api/v1/tasks/${taskC}/events`, c.key);
      expect(overGateway.status).toBe(429);
      expect(overGateway.body.error?.message).toMatch(/GATEWAY_EVENT_STREAMS\)/);

      // An idle stream hears a comment line each GATEWAY_EVENT_HEARTBEAT_MS.
      const reader = open[2]!.res.body!.getReader();
      let text = '';
      const until = Date.now() + 10_000;
      while (!text.includes(': heartbeat') && Date.now() < until)
        text += new TextDecoder().decode((await reader.read()).value);
      expect(text).toMatch(/^retry: \d+\n\n/);
      expect(text).toContain(': heartbeat\n\n');
    } finally {
      for (const o of open) o.abort.abort();
    }
    // A closed stream frees its place.
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      const probe = await openEvents(taskC, c.key);
      status = probe.status;
      probe.abort.abort();
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
  }, 60_000);

  it("media-worker tasks watch follows a task: progress on stderr, the task on stdout, exit 0; another account's task exits 1", async () => {
    const owner = await e2e.newAccount(1000);
    const other = await e2e.newAccount(1000);
    // The strip, a longer run than the photo's: the followers, started after the submission, join it before it ends.
    const id = await submitUpscale(owner.key, '/strip.png');
    const run = promisify(execFile);
    const env = { ...process.env, MEDIA_WORKER_API_KEY: owner.key };
    // The shipped CLI and the Python example follow the same task side by side.
    const [cli, python] = await Promise.all([
      run(process.execPath, [CLI, 'tasks', 'watch', id, '--url', e2e.gateway.url], { env }),
      hasPython
        ? run('python3', [PYTHON_EXAMPLE, '--url', e2e.gateway.url, '--task', id], { env, timeout: 170_000 })
        : undefined,
    ]);
    const polled = await e2e.api('GET', `/api/v1/tasks/${id}`, owner.key);
    expect(JSON.parse(cli.stdout)).toEqual(polled.body.data);
    expect(cli.stderr).toContain(`${id}: completed`);
    expect(cli.stderr).toMatch(new RegExp(`${id}: upscaling \\d+/\\d+ tiles`));
    expect(cli.stderr).toMatch(new RegExp(`${id}: upscaling \\d+/\\d+ tiles [\\d.]+ %, about \\d+ s left`));
    if (python !== undefined) {
      expect(JSON.parse(python.stdout)).toEqual(polled.body.data);
      expect(python.stderr).toContain(`${id}: completed`);
      expect(python.stderr).toMatch(new RegExp(`${id}: upscaling \\d+/\\d+ tiles [\\d.]+ %, about \\d+ s left`));
    }

    const refused = await run(process.execPath, [
      CLI,
      'tasks',
      'watch',
      id,
      '--url',
      e2e.gateway.url,
      '--api-key',
      other.key,
    ]).catch((err: { code: number; stderr: string }) => err);
    expect(refused).toMatchObject({ code: 1 });
    expect((refused as { stderr: string }).stderr).toMatch(/404 TASK_NOT_FOUND/);

    const help = await run(process.execPath, [CLI, 'tasks', 'watch', '--help']);
    expect(help.stdout).toMatch(/MEDIA_WORKER_API_KEY/);
  }, 180_000);
});
