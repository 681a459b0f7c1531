import { describe, expect, it } from 'vitest';
import { KIND_RUNTIMES } from '../../src/app/kinds.js';
import { createEngine } from '../../src/app/run-job.js';
import { CPU_WARM_SIDE, warmDims, warmNetworks, warmPlan } from '../../src/app/warm-start.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';

describe('warm before ready', () => {
  it('plans every network of the served kinds, and nothing of the others', () => {
    const engine = createEngine(KIND_RUNTIMES, loadConfig({}), createLogger('silent'));
    try {
      expect(warmPlan(['image'], engine, false).map((s) => s.what)).toEqual([
        'sr image x1',
        'sr image x2',
        'sr image x4',
      ]);
      const lips = warmPlan(['video', 'lipsync'], engine, false).map((s) => s.what);
      expect(lips.slice(0, 3)).toEqual(['sr video x1', 'sr video x2', 'sr video x4']);
      expect(lips).toEqual(
        expect.arrayContaining([
          'lipsync vendor-lipsync-2',
          'lipsync vendor-lipsync-2-pro',
          'lipsync vendor-lipsync-3',
          'sr mouth x4',
        ]),
      );
      expect(lips.some((w) => w.startsWith('face detector '))).toBe(true);
      expect(warmPlan(['music'], engine, false)).toEqual([]);
    } finally {
      void engine.release();
    }
  });

  it('runs the budget tile on a GPU (the shape large inputs run at), a small one on the CPU', () => {
    expect(warmDims({ tiling: { tile: 512, overlap: 10, batch: 2 } }, true)).toEqual([2, 3, 512, 512]);
    expect(warmDims({ tiling: { tile: 512, overlap: 10, batch: 2 } }, false)).toEqual([
      1,
      3,
      CPU_WARM_SIDE,
      CPU_WARM_SIDE,
    ]);
    expect(warmDims({ tiling: { tile: 256, overlap: 10 } }, true)).toEqual([1, 3, 256, 256]);
  });

  it("with the real networks: opens and runs them before any job, so the job's loader finds them open; what cannot open is reported, not thrown", async () => {
    const lines: string[] = [];
    const logger = createLogger('info', 'stderr', (json) => lines.push(json));
    const config = loadConfig({
      MEDIA_WORKER_SR_MODELS: 'image=realesrgan-x4fast,video=realesrgan-x4fast,mouth=realesrgan-x4fast',
      MEDIA_WORKER_THREADS: '1',
    });
    const engine = createEngine(KIND_RUNTIMES, config, logger);
    try {
      expect(engine.sessions.size).toBe(0);
      const report = await warmNetworks(config, engine, ['image', 'video', 'lipsync'], logger);
      expect(report.filter((s) => s.what.startsWith('sr ')).every((s) => s.error === undefined)).toBe(true);
      expect(report.find((s) => s.what.startsWith('face detector '))?.error).toBeUndefined();
      // No lip-sync weights on this machine: said per model id, and the daemon goes on.
      expect(report.find((s) => s.what === 'lipsync vendor-lipsync-2')?.error).toMatch(/not installed/);
      const opened = engine.sessions.size;
      expect(opened).toBe(1); // one network serves image, video and the mouth here
      const t0 = performance.now();
      const loaded = await engine.loadSrModel('image', '2');
      expect(performance.now() - t0).toBeLessThan(200);
      expect(engine.sessions.size).toBe(opened);
      expect(loaded.name).toBe('realesrgan-x4fast');
      const line = lines
        .map((l) => JSON.parse(l) as { msg: string; steps?: unknown[] })
        .find((l) => l.msg.startsWith('inference ready'));
      expect(line?.msg).toMatch(/^inference ready, but 3 of \d+ networks could not be opened/);
      expect(line?.steps).toHaveLength(report.length);
    } finally {
      await engine.release();
    }
  });
});
