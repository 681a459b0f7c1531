/**
 * The face pass beside the output pass (face-schedule.ts): on clips longer than the look-ahead,
 * faces decided while detection runs give the output that detecting first gives; a wrong forecast
 * of the frame count falls back to detecting first; the active speaker is still found.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache } from '../../../../src/inference/index.js';
import {
  lipsyncFile,
  type LipsyncDeps,
  type LipsyncRequest,
  releaseLipsyncThreads,
  type RgbFrame,
  parseLipsyncModelMapping,
} from '../../../../src/kinds/lipsync/pipeline/index.js';
import type { MediaInfo } from '../../../../src/media/index.js';
import {
  SIDE,
  TWO_FACES,
  changedPixels,
  childProcesses,
  encodeClip,
  faceFrames,
  lipsyncRequest,
  outputFrames,
  probe,
  sourceFrames,
  speechClip,
  twoFaceClip,
} from './pipeline-fixtures.js';

/** 4 s at 25 fps: twice the look-ahead, so most frames are decided while detection runs. */
const FRAMES = 100;

function maxDifference(a: readonly RgbFrame[], b: readonly RgbFrame[]): number {
  let max = 0;
  a.forEach((frame, i) => {
    const other = (b[i] as RgbFrame).data;
    for (let k = 0; k < frame.data.length; k += 1)
      max = Math.max(max, Math.abs((frame.data[k] as number) - (other[k] as number)));
  });
  return max;
}

describe('lip-sync with the face pass beside the output pass', () => {
  const sessions = new SessionCache({ thread: false, threads: 1 });
  const deps: LipsyncDeps = { sessions, lipsyncModelMapping: parseLipsyncModelMapping('wav2lip-test') };
  let dir: string;
  let clip: string;
  let speech: { file: string; info: MediaInfo };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'lipsync-overlap-'));
    clip = await encodeClip(path.join(dir, 'face.mp4'), await faceFrames(FRAMES), { width: SIDE, height: SIDE }, 'mp4');
    const file = await speechClip(path.join(dir, 'speech.mp3'));
    speech = { file, info: await probe(file) };
  });

  afterAll(async () => {
    await releaseLipsyncThreads();
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  });

  // The output is the longer input: every one of the video's frames is detected and shown.
  function request(video: string, outputName: string, extra: Partial<LipsyncRequest> = {}): Promise<LipsyncRequest> {
    return lipsyncRequest(video, speech, path.join(dir, outputName), { syncMode: 'silence', ...extra });
  }

  it('decides faces while detecting and writes what detecting first writes', async () => {
    const overlapped = await lipsyncFile(await request(clip, 'overlapped.mp4'), deps);
    const sequential = await lipsyncFile(await request(clip, 'sequential.mp4'), { ...deps, overlapFacePass: false });
    expect(overlapped.stats.facePassOverlapped).toBe(true);
    expect(sequential.stats.facePassOverlapped).toBe(false);
    // Decided at 63, 76, 89 frames detected (look-ahead 50, block 13), then the rest at the end.
    expect(overlapped.stats.faceDecisions).toBe(4);
    expect(sequential.stats.faceDecisions).toBe(1);
    for (const outcome of [overlapped, sequential])
      expect(outcome).toMatchObject({ frames: FRAMES, drivenFrames: FRAMES });
    const a = await outputFrames(overlapped.outputPath, SIDE, SIDE);
    const b = await outputFrames(sequential.outputPath, SIDE, SIDE);
    expect(a).toHaveLength(FRAMES);
    // The same boxes: the same crops and pastes (a network call of another batch size may round differently by a level).
    expect(maxDifference(a, b)).toBeLessThanOrEqual(1);
  });

  it('detects first after all when the video decodes to another frame count than forecast, leaving nothing behind', async () => {
    const logged: string[] = [];
    const logger = {
      info: (_: object, msg: string) => logged.push(msg),
      warn: (_: object, msg: string) => logged.push(msg),
    };
    const outcome = await lipsyncFile(await request(clip, 'refit.mp4', { logger }), {
      ...deps,
      forecastFrames: async () => FRAMES - 10,
    });
    expect(outcome).toMatchObject({ frames: FRAMES, drivenFrames: FRAMES });
    expect(outcome.stats.facePassOverlapped).toBe(false);
    expect(logged).toContain(
      'the video decoded to another frame count than forecast; lip-syncing again from the counted frames',
    );
    expect(await outputFrames(outcome.outputPath, SIDE, SIDE)).toHaveLength(FRAMES);
    expect((await readdir(dir)).filter((f) => f.endsWith('.partial'))).toEqual([]);
    expect(await childProcesses()).toEqual([]);
  });

  it('stops both passes when cancelled while detection runs ahead', async () => {
    const controller = new AbortController();
    const attempt = lipsyncFile(
      await request(clip, 'cancelled.mp4', {
        signal: controller.signal,
        onProgress: (p) => {
          if (p.stage === 'detecting faces' && p.done >= 70) controller.abort(new Error('job cancelled'));
        },
        progressIntervalMs: 0,
      }),
      deps,
    );
    await expect(attempt).rejects.toThrow('job cancelled');
    expect((await readdir(dir)).filter((f) => f.startsWith('.cancelled') || f === 'cancelled.mp4')).toEqual([]);
    expect(await childProcesses()).toEqual([]);
  });

  it('drives the face that speaks in a two-face clip, deciding as it goes', async () => {
    const twoFaces = await twoFaceClip(dir, FRAMES);
    const sources = await sourceFrames(twoFaces, await probe(twoFaces));
    const outcome = await lipsyncFile(await request(twoFaces, 'speaker.mp4', { activeSpeaker: true }), deps);
    expect(outcome.stats.faceDecisions).toBe(4);
    expect(outcome.faces).toMatchObject({ tracks: 2, method: 'active-speaker' });
    const out = await outputFrames(outcome.outputPath, TWO_FACES.width, TWO_FACES.height);
    let left = 0;
    let framesRight = 0;
    out.forEach((frame, i) => {
      const changed = changedPixels(sources[i] as RgbFrame, frame);
      const onLeft = changed.filter((p) => p.x < TWO_FACES.split).length;
      left += onLeft;
      if (changed.length - onLeft > 100) framesRight += 1;
    });
    expect(left).toBe(0);
    expect(framesRight).toBeGreaterThanOrEqual(FRAMES - 2);
  });
});
