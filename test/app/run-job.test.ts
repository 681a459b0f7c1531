import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { KIND_RUNTIMES } from '../../src/app/kinds.js';
import { createEngine, executeJob, type Engine } from '../../src/app/run-job.js';
import { parseJob } from '../../src/jobs/index.js';
import { BUNDLED_PHOTOS_DIR } from '../../src/paths.js';

let dir: string;
let engine: Engine;
let photo: string;
const logger = pino({ level: 'silent' });

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-execute-'));
  photo = path.join(dir, 'small.png');
  await sharp(path.join(BUNDLED_PHOTOS_DIR, 'astronaut.png')).resize(40, 40).png().toFile(photo);
  engine = createEngine(KIND_RUNTIMES, loadConfig({ MEDIA_WORKER_TMP_DIR: dir }), logger);
});
afterAll(async () => {
  await engine.sessions.release();
  await rm(dir, { recursive: true, force: true });
});

describe('executeJob', () => {
  const run = (credits: number | undefined) =>
    executeJob(
      parseJob({
        id: `charged-${credits}`,
        model: 'vendor-image-upscale',
        input: { image_url: photo },
        ...(credits === undefined ? {} : { credits }),
      }),
      engine,
      { taskId: `charged-${credits}`, logger, allowLocalPaths: true, store: async (p) => ({ url: p }) },
    );

  it.each([undefined, 20, 25])('processes a job charged %s credits for a price of 20', async (credits) => {
    await expect(run(credits)).resolves.toMatchObject({
      quote: { creditsUsed: 20 },
      result: { width: 80, height: 80 },
    });
  });

  it('refuses a job charged less than its measured price with INSUFFICIENT_CREDITS (402) and leaves no temp files', async () => {
    await expect(run(19)).rejects.toMatchObject({
      code: 'INSUFFICIENT_CREDITS',
      status: 402,
      message: 'Expected at least 20 credits charged for this job but received 19',
    });
    expect((await readdir(dir)).filter((f) => f.startsWith('media-worker-'))).toEqual([]);
  });
});
