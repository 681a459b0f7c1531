/**
 * A cancelled job delivers nothing (issue 38, item 6), tried as a customer would, through the
 * shipped `serve` and `gateway` under the shipped per-role users: image and video upscales are
 * submitted and cancelled at many points of their run. A cancel that wins (200, refunded) leaves no
 * file under RESULTS_DIR/<kind>/<task id>/ when its answer comes (the refund is final by then) nor
 * after the worker has let go of the job, no work folder of the task under the worker's temp
 * directory once the pipeline stops (at its next tile or frame batch; ffmpeg is killed), and no
 * ffmpeg of the task still running. A cancel that loses (409: it completed first) keeps its
 * result. Each cancel is sent at a point the run itself reports on its live events
 * (GET /api/v1/tasks/{id}/events: a stage, a share of the tiles or frames done, the end), not at a
 * moment of a clock: a busy machine slows the run and its reports alike. Before the fix, 8 of 9
 * winning cancels of a running image upscale left RESULTS_DIR/image/<task id>/output.png.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { BUNDLED_PHOTOS_DIR } from '../../../src/paths.js';
import { serverSentEvents, type ServerSentEvent } from '../../../src/cli/event-stream.js';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { useGatewayE2e, type Account } from './e2e-harness.js';

const e2e = useGatewayE2e({
  name: 'media-gateway-cancel-',
  async files(dir) {
    // Large enough that an x2 upscale runs for seconds on the CPU: the cancels land inside it. The
    // clip's 30 frames give the run several progress reports (the pipeline sends one each 250 ms at most).
    const photo = await sharp(path.join(BUNDLED_PHOTOS_DIR, 'chelsea.png')).resize(72, 48).png().toBuffer();
    const video = path.join(dir, 'clip.mp4');
    await promisify(execFile)('ffmpeg', [
      '-v',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc=size=48x32:rate=10',
      '-t',
      '3',
      '-c:v',
      'libx264',
      '-pix_fmt',
      'yuv420p',
      video,
    ]);
    return { '/photo.png': photo, '/clip.mp4': await readFile(video) };
  },
  // Every progress report of the run goes out (the cancels wait for them).
  env: { WORKER_CONCURRENCY: 'image=1,video=1,lipsync=0,music=0,music-video=0', WORKER_PROGRESS_INTERVAL_MS: '0' },
});

function resultsOf(kind: string, id: string): string {
  return path.join(e2e.dir, 'results', kind, id);
}

async function filesIn(dir: string): Promise<string[]> {
  return existsSync(dir) ? readdir(dir) : [];
}

/** The worker's temp entries that name the task (its job folder), and ffmpeg processes working in them. */
async function leftovers(id: string): Promise<{ dirs: string[]; ffmpeg: string[] }> {
  const tmp = e2e.env['MEDIA_WORKER_TMP_DIR'] as string;
  const dirs = (await readdir(tmp, { recursive: true })).filter((e) => e.includes(id));
  const ffmpeg: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('ffmpeg') && cmdline.includes(tmp) && cmdline.includes(id))
      ffmpeg.push(cmdline.replaceAll('\0', ' '));
  }
  return { dirs, ffmpeg };
}

async function workerIdle(): Promise<boolean> {
  const port = /"healthPort":(\d+)/.exec(e2e.serve.output())?.[1];
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return !/^media_worker_jobs_in_flight\{kind="\w+"\} [1-9]/m.test(text);
}

/** A progress report of the run, as its live events carry it. */
interface Step {
  stage: string;
  done?: number;
  total?: number;
}

/**
 * A point of the run where a cancel is sent: right after the submission (`submitted`), at the first
 * event at or past the point (progress reports may be skipped: at most one each 250 ms), or at
 * the task's end (`settled`: the cancel must lose). `mustWin`: the run has most of its work
 * ahead there (all its tiles or at least half its frames), far more than a cancel's way to the worker.
 */
interface Point {
  name: string;
  mustWin: boolean;
  /** Whether a progress report is at or past the point; unset: the submission or the end. */
  reached?: (step: Step) => boolean;
  settled?: true;
}

const upscaled = (share: number) => (s: Step) =>
  s.stage === 'upscaling' && s.done !== undefined && s.total !== undefined && s.done >= share * s.total;
const SUBMITTED: Point = { name: 'submitted', mustWin: true };
const FETCHING: Point = { name: 'any progress (fetching and probing)', mustWin: true, reached: () => true };
const SETTLED: Point = { name: 'the end (completed)', mustWin: false, settled: true };

/** Where each kind's cancels go, in the run's order. */
const POINTS: Record<'image' | 'video', Point[]> = {
  image: [
    SUBMITTED,
    FETCHING,
    { name: 'upscaling, no tile done', mustWin: true, reached: (s) => s.stage === 'upscaling' },
    { name: 'upscaling, all tiles done (storing follows)', mustWin: false, reached: upscaled(1) },
    SETTLED,
  ],
  video: [
    SUBMITTED,
    FETCHING,
    { name: 'upscaling, a frame done', mustWin: true, reached: (s) => s.stage === 'upscaling' && (s.done ?? 0) >= 1 },
    { name: 'upscaling, a quarter of the frames done', mustWin: true, reached: upscaled(0.25) },
    { name: 'upscaling, half the frames done', mustWin: true, reached: upscaled(0.5) },
    { name: 'upscaling, three quarters done', mustWin: false, reached: upscaled(0.75) },
    { name: 'upscaling, all frames done (encoding and storing follow)', mustWin: false, reached: upscaled(1) },
    SETTLED,
  ],
};

interface Tried {
  point: string;
  /** What the run had reported when the cancel went: the last event's name and data. */
  seen: string;
  won: boolean;
  atAnswer: string[];
  afterwards: string[];
  dirs: string[];
  ffmpeg: string[];
}

async function submit(account: Account, kind: 'image' | 'video'): Promise<string> {
  const submitted =
    kind === 'image'
      ? await e2e.api('POST', '/api/v1/tools/upscale-image', account.key, {
          image_url: `${e2e.mediaUrl}/photo.png`,
          upscale_factor: '2',
        })
      : await e2e.api('POST', '/api/v1/tools/upscale-video', account.key, {
          video_url: `${e2e.mediaUrl}/clip.mp4`,
          upscale_factor: '2',
        });
  expect(submitted.status, JSON.stringify(submitted.body)).toBe(200);
  return submitted.body.data?.id ?? '';
}

/**
 * Reads the task's live events until the point is reached (or the task settled before it); returns
 * the last event read and the rest of the stream, read to its end after the cancel (which frees
 * the stream's place).
 */
async function untilPoint(
  account: Account,
  id: string,
  point: Point,
): Promise<{ seen: ServerSentEvent | undefined; rest: () => Promise<void> }> {
  const res = await fetch(`${e2e.gateway.url}/api/v1/tasks/${id}/events`, {
    headers: { authorization: `Bearer ${account.key}` },
  });
  if (res.status !== 200) throw new Error(`The events of ${id}: ${res.status} ${await res.text()}`);
  const events = serverSentEvents(res.body!)[Symbol.asyncIterator]();
  const rest = async (): Promise<void> => {
    while (!(await events.next()).done);
  };
  for (;;) {
    const next = await events.next();
    if (next.done) return { seen: undefined, rest };
    const event = next.value;
    // The terminal event: the task settled before (or at) the point.
    if (event.event !== 'progress') return { seen: event, rest };
    if (point.reached?.(JSON.parse(event.data) as Step)) return { seen: event, rest };
  }
}

async function cancelAt(account: Account, kind: 'image' | 'video', point: Point): Promise<Tried> {
  const id = await submit(account, kind);
  const { seen, rest } =
    point.reached === undefined && point.settled === undefined
      ? { seen: undefined, rest: async () => {} }
      : await untilPoint(account, id, point);
  const cancel = await e2e.api('POST', `/api/v1/tasks/${id}/cancel`, account.key);
  const atAnswer = await filesIn(resultsOf(kind, id));
  const won = cancel.status === 200;
  if (won) expect(cancel.body.data).toMatchObject({ status: 'failed', creditsUsed: 0, error: { code: 'CANCELLED' } });
  else expect(cancel.body.error?.code).toBe('TASK_NOT_PENDING');
  await rest();
  await waitFor('the worker to let go of the job', workerIdle, 60_000, 100);
  // The pipeline stops at its next step (a tile, a frame batch; ffmpeg is killed): then its work folder goes.
  const left = await waitFor(
    'the pipeline to stop',
    async () => {
      const l = await leftovers(id);
      return l.dirs.length === 0 && l.ffmpeg.length === 0 ? l : undefined;
    },
    60_000,
    100,
  ).catch(() => leftovers(id));
  // A won cancel: whatever the run stored on its way out (an executor that returned after the
  // cancel's answer) is removed once it returns (job-runner.ts): wait for that state, and keep
  // what is still there if it never comes. A lost one: the completed task's result stays.
  const afterwards = won
    ? await waitFor(
        'the results of the cancelled task to be removed',
        async () => ((await filesIn(resultsOf(kind, id))).length === 0 ? [] : undefined),
        30_000,
        100,
      ).catch(() => filesIn(resultsOf(kind, id)))
    : await filesIn(resultsOf(kind, id));
  return {
    point: point.name,
    seen: seen === undefined ? '' : `${seen.event} ${seen.data}`,
    won,
    atAnswer,
    afterwards,
    ...left,
  };
}

describe('a cancelled upscale delivers nothing', () => {
  it.each(['image', 'video'] as const)(
    '%s: a cancel that wins leaves no result, no work folder and no ffmpeg, at every point of the run',
    async (kind) => {
      const account = await e2e.newAccount(100_000);
      const tried: Tried[] = [];
      for (const point of POINTS[kind]) tried.push(await cancelAt(account, kind, point));
      const all = JSON.stringify(tried);
      // With most of the run ahead, the cancel comes first; at the end it comes too late.
      for (const [i, point] of POINTS[kind].entries()) {
        if (point.mustWin) expect(tried[i]!.won, `the cancel at "${point.name}": ${all}`).toBe(true);
        if (point.settled) expect(tried[i]!.won, `the cancel at "${point.name}": ${all}`).toBe(false);
      }
      for (const t of tried.filter((x) => x.won))
        expect(t, `cancelled at "${t.point}": ${all}`).toMatchObject({
          atAnswer: [],
          afterwards: [],
          dirs: [],
          ffmpeg: [],
        });
      // A cancel that came too late left the completed task its result.
      for (const t of tried.filter((x) => !x.won))
        expect(t.afterwards.length, `completed before the cancel at "${t.point}": ${all}`).toBeGreaterThan(0);
    },
    600_000,
  );
});
