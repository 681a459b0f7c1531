/**
 * A host whose ffmpeg cannot draw the music video's waveform (a stand-in ffmpeg whose filter list
 * lacks `showwaves`, everything else the real one) does not take music videos: the shipped `serve`
 * announces the kind not ready, saying what is missing, and a job of the kind waits in the stream
 * untouched (no claim, no event), while the same host still serves images. Harness:
 * test/scenarios/gateway/e2e-harness.ts.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep, waitFor } from '../../worker/helpers/jetstream.js';
import { useGatewayE2e } from './e2e-harness.js';

const realFfmpeg = execFileSync('sh', ['-c', 'command -v ffmpeg']).toString().trim();
const standIn = path.join(mkdtempSync(path.join(tmpdir(), 'ffmpeg-without-showwaves-')), 'ffmpeg');
writeFileSync(
  standIn,
  `#!/bin/sh\nif [ "$2" = "-filters" ]; then "${realFfmpeg}" "$@" | grep -v ' showwaves '; exit 0; fi\nexec "${realFfmpeg}" "$@"\n`,
  { mode: 0o755 },
);

afterAll(() => rmSync(path.dirname(standIn), { recursive: true, force: true }));

const e2e = useGatewayE2e({
  name: 'media-music-video-unready-e2e-',
  files: async () => ({
    '/small.png': await sharp({ create: { width: 20, height: 10, channels: 3, background: '#808080' } })
      .png()
      .toBuffer(),
  }),
  env: { WORKER_CONCURRENCY: 'image=1,video=0,lipsync=0,music=0,music-video=1', FFMPEG_PATH: standIn },
});

describe('a host without what the music video needs', () => {
  it('announces the kind not ready, says why, and leaves its jobs in the stream', async () => {
    const kinds = await waitFor(
      'the worker to announce its kinds',
      async () => {
        const reply = await e2e.cp.nc.request('media.capabilities', '', { timeout: 5000 });
        const body = reply.json() as { kinds: Record<string, { ready: boolean; reasons: string[] }> };
        return body.kinds['image']?.ready === true && body.kinds['music-video']?.reasons.length
          ? body.kinds
          : undefined;
      },
      60_000,
      500,
    );
    expect(kinds['music-video']?.ready).toBe(false);
    expect(kinds['music-video']?.reasons.join(' ')).toContain('ffmpeg filter showwaves');

    const job = {
      id: 'mv-unready-1',
      model: 'vendor-music-video',
      input: { audio_url: `${e2e.mediaUrl}/a.mp3`, image_url: `${e2e.mediaUrl}/small.png` },
      credits: 20,
    };
    await e2e.cp.publishJob('music-video', 'vendor-music-video', job);
    await sleep(3000);
    expect(await e2e.cp.eventsOf('mv-unready-1')).toEqual([]);
    expect(await e2e.cp.jobsInQueue()).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
