import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache } from '../../../../../src/inference/index.js';
import {
  loadBlazeFace,
  type FaceDetector,
  chooseDrivenFaces,
  detectFaceTracks,
  mostProminentTrack,
  prominence,
  type FaceBox,
  type FaceTrack,
  type RgbFrame,
} from '../../../../../src/kinds/lipsync/pipeline/index.js';
import { ProcessingError } from '../../../../../src/errors.js';
import { ASTRONAUT, decodeFrames, requireMegamind, saveWithBoxes, toFrame } from '../faces-helpers.js';

describe('faces of a whole video', () => {
  const sessions = new SessionCache({ thread: false });
  let detector: FaceDetector;
  beforeAll(async () => {
    detector = await loadBlazeFace('blazeface-back-256', { sessions, minScore: 0.5 });
  });
  afterAll(() => sessions.release());

  it('tracks Megamind: Roxanne and the diner behind her, then, after the cut, the man facing her; drives one face per shot', async () => {
    // Five seconds (two shots), halved to 360x264 to keep the test short.
    const frames = await decodeFrames(requireMegamind(), { duration: 5, filter: 'scale=360:-2' });
    expect(frames.length).toBeGreaterThanOrEqual(119);
    let seen = 0;
    const result = await detectFaceTracks(frames, detector, { onFrame: (done) => (seen = done) });
    expect(seen).toBe(frames.length);
    expect(result.frameCount).toBe(frames.length);
    // The clip fades in from two black frames; the second shot starts at frame 99.
    expect(result.cuts).toEqual([2, 99]);
    const present = (boxes: readonly (FaceBox | undefined)[]): string =>
      boxes.map((b) => (b === undefined ? '.' : '#')).join('');
    const firstShot = `..${'#'.repeat(97)}${'.'.repeat(frames.length - 99)}`;
    const secondShot = `${'.'.repeat(99)}${'#'.repeat(frames.length - 99)}`;
    const inFirst = result.tracks.filter((t) => present(t.boxes) === firstShot);
    const inSecond = result.tracks.filter((t) => present(t.boxes) === secondShot);
    // Roxanne and the diner through the whole first shot (gaps bridged), the man through the second; nothing crosses the cut.
    expect(inFirst).toHaveLength(2);
    expect(inSecond).toHaveLength(1);
    expect(result.tracks.every((t) => t.boxes[98] === undefined || t.boxes[99] === undefined)).toBe(true);
    const [roxanne, diner] = [...inFirst].sort((a, b) => prominence(b) - prominence(a)) as [
      (typeof inFirst)[number],
      (typeof inFirst)[number],
    ];
    expect(prominence(diner)).toBeLessThan(prominence(roxanne) / 2);
    const centres = (t: FaceTrack): number[] => t.boxes.flatMap((b) => (b === undefined ? [] : [b.x + b.width / 2]));
    expect(Math.max(...centres(roxanne))).toBeLessThan(180);
    expect(Math.min(...centres(diner))).toBeGreaterThan(200);
    await saveWithBoxes(
      frames[20] as RgbFrame,
      result.tracks.map((t) => t.boxes[20]).filter((b): b is FaceBox => b !== undefined),
      'megamind-tracks-20',
    );

    const driven = chooseDrivenFaces(result, { activeSpeaker: false });
    expect(driven.method).toBe('most-prominent');
    expect(driven.tracks.map((t) => t.id).sort()).toEqual([roxanne.id, inSecond[0]?.id].sort());
    expect(driven.boxes.slice(0, 99)).toEqual(roxanne.boxes.slice(0, 99));
    expect(driven.boxes.slice(99)).toEqual(inSecond[0]?.boxes.slice(99));
    expect(driven.boxes.slice(0, 2)).toEqual([undefined, undefined]);
    expect(mostProminentTrack(inFirst)).toBe(roxanne);
  });

  it('leaves frames without a face undriven, and drives the face again when it comes back', async () => {
    const face = await toFrame(sharp(ASTRONAUT).resize(256, 256));
    const black: RgbFrame = { data: new Uint8Array(256 * 256 * 3), width: 256, height: 256 };
    const frames = [...Array(10).fill(face), ...Array(12).fill(black), ...Array(10).fill(face)] as RgbFrame[];
    const result = await detectFaceTracks(frames, detector);
    expect(result.tracks).toHaveLength(2);
    const driven = chooseDrivenFaces(result, { activeSpeaker: false });
    expect(driven.tracks).toHaveLength(2);
    expect(driven.boxes.map((b) => (b === undefined ? '.' : '#')).join('')).toBe(
      `${'#'.repeat(10)}${'.'.repeat(12)}${'#'.repeat(10)}`,
    );
  });

  it('fails with a processing failure (LIPSYNC_FAILED for the job) when the video has no face at all', async () => {
    // ffmpeg's test pattern (moving colour bars, a clock, text): busy, and no face.
    const frames = await decodeFrames('testsrc2=size=320x240:rate=10:duration=2', { lavfi: true });
    expect(frames).toHaveLength(20);
    const result = await detectFaceTracks(frames, detector);
    expect(result.tracks).toEqual([]);
    const attempt = (): unknown => chooseDrivenFaces(result, { activeSpeaker: false });
    expect(attempt).toThrow(ProcessingError);
    expect(attempt).toThrow(
      `Expected a face to drive but no face was found in the video (${frames.length} frames searched)`,
    );
    try {
      attempt();
    } catch (error) {
      expect(error).toMatchObject({ name: 'ProcessingError', retryable: false });
    }
  });

  it('stops when its signal is aborted', async () => {
    const face = await toFrame(sharp(ASTRONAUT).resize(128, 128));
    const controller = new AbortController();
    controller.abort(new Error('job cancelled'));
    await expect(detectFaceTracks([face, face], detector, { signal: controller.signal })).rejects.toThrow(
      'job cancelled',
    );
  });
});
