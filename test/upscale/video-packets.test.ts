/**
 * The packet count that forecasts a video's frame count (lip-sync plans its timeline from it while
 * detection runs): real ffprobe on clips made by ffmpeg, checked against the frames ffmpeg decodes.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveFfmpeg, resolveFfprobe, runProcess } from '../../src/media/index.js';
import { parsePacketCount, probeVideoPacketCount, videoPacketCountArgs } from '../../src/video/index.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'video-packets-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Frames a full decode delivers (ffprobe -count_frames decodes every one). */
async function decodedFrames(file: string): Promise<number> {
  const { stdout } = await runProcess(resolveFfprobe(), ['-v', 'error', '-select_streams', 'V:0', '-count_frames', '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', file]);
  return Number.parseInt(stdout.toString('utf8'), 10);
}

describe('probeVideoPacketCount', () => {
  it.each([
    ['mp4', 'mp4', ['-c:v', 'libx264', '-preset', 'veryfast', '-bf', '2'], 48],
    ['mov', 'mov', ['-c:v', 'libx264', '-preset', 'veryfast'], 30],
    ['mkv', 'mkv', ['-c:v', 'libx264', '-preset', 'veryfast'], 37],
    ['webm', 'webm', ['-c:v', 'libvpx', '-deadline', 'realtime', '-cpu-used', '8', '-b:v', '500k'], 41],
    ['gif', 'gif', [], 12],
  ] as const)('counts the frames of a %s clip without decoding it', async (ext, container, codec, frames) => {
    const file = path.join(dir, `clip.${ext}`);
    await runProcess(resolveFfmpeg(), ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=96x64:rate=25', '-frames:v', String(frames), ...codec, file]);
    expect(await decodedFrames(file)).toBe(frames);
    expect(await probeVideoPacketCount(file, container, 0)).toBe(frames);
  });

  it('gives no forecast, rather than an error, for a file it cannot read', async () => {
    const file = path.join(dir, 'junk.mp4');
    await writeFile(file, Buffer.from('not a video at all'));
    expect(await probeVideoPacketCount(file, 'mp4', 0)).toBeUndefined();
  });

  it('reads only the local file, with the sniffed demuxer, and the chosen video stream', () => {
    const args = videoPacketCountArgs('/in/clip.mkv', 'mkv', 1);
    expect(args.join(' ')).toContain('-protocol_whitelist file');
    expect(args.join(' ')).toMatch(/-format_whitelist \S*matroska/);
    expect(args.slice(args.indexOf('-select_streams'), args.indexOf('-select_streams') + 2)).toEqual(['-select_streams', 'V:1']);
    expect(args).toContain('-count_packets');
  });

  it.each([
    [{ streams: [{ nb_read_packets: '250' }] }, 250],
    [{ streams: [{ nb_read_packets: 7 }] }, 7],
    [{ streams: [{ nb_read_packets: '0' }] }, undefined],
    [{ streams: [{ nb_read_packets: 'N/A' }] }, undefined],
    [{ streams: [] }, undefined],
    [{}, undefined],
    ['nonsense', undefined],
  ])('parses %j as %s', (json, count) => {
    expect(parsePacketCount(json)).toBe(count);
  });
});
