/**
 * One voice on stderr (issue 47, item 4): the README's first command, `upscale-image`, run as a user
 * runs it with stderr a pipe (CI, systemd), speaks human lines by default and JSON lines with
 * `--log-format json` or LOG_FORMAT=json, never both; read line by line. On a small photo with the
 * slim network it logs (LOG_LEVEL=info) and shows progress in about a second. The built CLI (dist/).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { chooseLogFormat, logFormat, logLevelFor } from '../../src/cli/log-format.js';
import { createJsonProgress, progressRecord } from '../../src/cli/progress.js';
import { createLogger } from '../../src/logger.js';
import { BUNDLED_PHOTOS_DIR } from '../../src/paths.js';
import { runCli, type CliRun } from '../helpers/cli.js';

function cli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const base = { ...process.env };
  delete base['LOG_FORMAT'];
  return runCli(args, {
    cwd: dir,
    env: { ...base, LOG_LEVEL: 'info', MEDIA_WORKER_SR_MODELS: 'video=esrgan-slim-x2,image=esrgan-slim-x2', ...env },
  });
}

function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

function parses(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

let dir: string;
let photo: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-log-format-'));
  photo = path.join(dir, 'coffee-small.jpg');
  await sharp(path.join(BUNDLED_PHOTOS_DIR, 'coffee.png')).resize(90, 60).jpeg().toFile(photo);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('upscale-image with stderr a pipe', () => {
  it.each([
    ['by default', [], {}],
    ['with --log-format human', ['--log-format', 'human'], { LOG_FORMAT: 'json' }],
  ] as const)(
    'speaks human lines %s: the estimate, progress and the logs, no line JSON',
    async (_how, flags, env) => {
      const r = await cli(['upscale-image', photo, '-o', path.join(dir, 'human.jpg'), ...flags], env);
      expect(r.code).toBe(0);
      const out = lines(r.stderr);
      expect(out.filter(parses)).toEqual([]);
      expect(out[0]).toMatch(/^estimate on this machine/);
      expect(out).toContainEqual(expect.stringMatching(/^upscaling .*tiles/));
      expect(out).toContainEqual(expect.stringMatching(/^info: job quoted \(taskId=local-/));
      expect(out.at(-1)).toMatch(/^done: .*human\.jpg \(\d+\.\ds\)$/);
      // stdout stays the task object.
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed' });
    },
    120_000,
  );

  it.each([
    ['with --log-format json after the command', ['--log-format', 'json'], {}, false],
    ['with --log-format json before the command', ['--log-format', 'json'], {}, true],
    ['with LOG_FORMAT=json', [], { LOG_FORMAT: 'json' }, false],
  ] as const)(
    'speaks JSON lines %s: every line a record, progress among them',
    async (_how, flags, env, before) => {
      const args = ['upscale-image', photo, '-o', path.join(dir, 'json.jpg')];
      const r = await cli(before ? [...flags, ...args] : [...args, ...flags], env);
      expect(r.code).toBe(0);
      const records = lines(r.stderr).map((line) => JSON.parse(line) as Record<string, unknown>);
      for (const record of records)
        expect(record).toMatchObject({ level: expect.any(Number), msg: expect.any(String), service: 'media-worker' });
      expect(records[0]).toMatchObject({
        level: 30,
        msg: expect.stringMatching(/^estimate on this machine/),
        estimate: { model: 'esrgan-slim-x2', seconds: expect.any(Number) },
      });
      expect(records).toContainEqual(
        expect.objectContaining({
          msg: 'progress',
          stage: 'upscaling',
          done: 1,
          total: 1,
          unit: 'tiles',
          percent: 100,
        }),
      );
      expect(records).toContainEqual(expect.objectContaining({ msg: 'job quoted' }));
      expect(records.at(-1)).toMatchObject({
        msg: expect.stringMatching(/^done: .*json\.jpg$/),
        seconds: expect.any(Number),
      });
      expect(JSON.parse(r.stdout)).toMatchObject({ status: 'completed' });
    },
    120_000,
  );

  it('reports a failure in the same voice', async () => {
    const human = await cli(['run', '{not json']);
    expect(human.code).toBe(1);
    expect(lines(human.stderr)).toEqual([expect.stringMatching(/^media-worker: Expected JSON in the JOB argument/)]);
    const json = await cli(['run', '{not json', '--log-format', 'json']);
    expect(json.code).toBe(1);
    expect(lines(json.stderr).map((line) => JSON.parse(line) as unknown)).toEqual([
      expect.objectContaining({ level: 50, msg: expect.stringMatching(/^Expected JSON in the JOB argument/) }),
    ]);
  }, 60_000);
});

describe('the one decision', () => {
  afterEach(() => chooseLogFormat({ flag: undefined, daemon: false }));

  it('the flag, else the setting, else human for a one-off command and json for a daemon', () => {
    expect(logFormat('auto')).toBe('human');
    expect(logFormat('json')).toBe('json');
    chooseLogFormat({ daemon: true });
    expect(logFormat('auto')).toBe('json');
    expect(logFormat('human')).toBe('human');
    chooseLogFormat({ flag: 'human' });
    expect(logFormat('json')).toBe('human');
  });

  it('human lines show warnings unless LOG_LEVEL is set; JSON lines the configured level', () => {
    expect(logLevelFor('human', 'info', {})).toBe('warn');
    expect(logLevelFor('human', 'debug', { LOG_LEVEL: 'debug' })).toBe('debug');
    expect(logLevelFor('json', 'info', {})).toBe('info');
  });
});

describe('progress as records', () => {
  it('sends a new stage and the last step at once, the rest at most once per interval, then the closing message', () => {
    const written: Record<string, unknown>[] = [];
    const logger = createLogger('info', 'stderr', (json) => written.push(JSON.parse(json) as Record<string, unknown>));
    let t = 0;
    const progress = createJsonProgress(logger, { intervalMs: 5000, now: () => t });
    progress.report({ stage: 'fetching and probing' });
    t = 1000;
    progress.report({ stage: 'upscaling', done: 0, total: 4, unit: 'tiles' });
    t = 2000;
    progress.report({ stage: 'upscaling', done: 1, total: 4, unit: 'tiles' });
    t = 5000;
    progress.report({ stage: 'upscaling', done: 4, total: 4, unit: 'tiles' });
    progress.close('done: out.png');
    progress.close();
    expect(
      written.map(({ msg, stage, done, percent, etaSeconds, seconds }) => ({
        msg,
        stage,
        done,
        percent,
        etaSeconds,
        seconds,
      })),
    ).toEqual([
      {
        msg: 'progress',
        stage: 'fetching and probing',
        done: undefined,
        percent: undefined,
        etaSeconds: undefined,
        seconds: undefined,
      },
      { msg: 'progress', stage: 'upscaling', done: 0, percent: 0, etaSeconds: undefined, seconds: undefined },
      { msg: 'progress', stage: 'upscaling', done: 4, percent: 100, etaSeconds: 0, seconds: undefined },
      {
        msg: 'done: out.png',
        stage: undefined,
        done: undefined,
        percent: undefined,
        etaSeconds: undefined,
        seconds: 5,
      },
    ]);
  });

  it('while one tile runs, a record every interval with its clock against the printed estimate; the counts as reported', () => {
    vi.useFakeTimers();
    try {
      const written: Record<string, unknown>[] = [];
      const logger = createLogger('info', 'stderr', (json) =>
        written.push(JSON.parse(json) as Record<string, unknown>),
      );
      const progress = createJsonProgress(logger, { intervalMs: 5000, estimateSeconds: 50 });
      progress.report({ stage: 'upscaling', done: 0, total: 1, unit: 'tiles' });
      vi.advanceTimersByTime(60_000);
      const steps = written.filter((r) => r['step'] !== undefined);
      expect(steps.length).toBe(12);
      expect(steps.every((r) => r['done'] === 0 && r['percent'] === 0)).toBe(true);
      expect(steps.at(-1)!['step']).toEqual({ index: 1, elapsedSeconds: 60, estimatedSeconds: 50 });
      progress.report({ stage: 'upscaling', done: 1, total: 1, unit: 'tiles' });
      progress.close('done');
      vi.advanceTimersByTime(20_000);
      expect(written.at(-1)).toMatchObject({ msg: 'done', seconds: 60 });
    } finally {
      vi.useRealTimers();
    }
  });

  it("a record carries the ETA at the stage's rate so far", () => {
    expect(progressRecord({ stage: 'upscaling', done: 1, total: 4, unit: 'tiles' }, 2)).toEqual({
      stage: 'upscaling',
      done: 1,
      total: 4,
      unit: 'tiles',
      percent: 25,
      etaSeconds: 6,
    });
  });
});
