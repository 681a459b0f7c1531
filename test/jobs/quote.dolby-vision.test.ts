/**
 * Dolby Vision is judged at the quote (media/dolby-vision.ts, jobs/input-checks.ts): a profile 5
 * stream (no HDR10, SDR or HLG base layer) is refused before anything is charged; a profile 8.4
 * stream (HLG base layer) is quoted like the HLG video it is. ffmpeg 5.1 cannot write a Dolby Vision
 * configuration record itself, so the test writes one into a real HEVC MP4 made by ffmpeg: a `dvcC`
 * box appended to its sample entry (renamed `dvh1`), every enclosing box grown by the same bytes.
 * ffprobe then reads the record as any phone's file would give it.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobError } from '../../src/errors.js';
import { quoteJob } from '../../src/jobs/quote.js';
import type { InputKind, QuoteDeps } from '../../src/jobs/quote-types.js';
import { normaliseToolBody } from '../../src/jobs/schemas.js';
import { probeMedia } from '../../src/media/index.js';
import { ffmpeg, makeClip, makeTempDir } from '../media/helpers.js';

/** Box header sizes to skip before a box's children: stsd has a full-box header and a count, a visual sample entry 78 bytes of fields. */
const CHILDREN_AT: Readonly<Record<string, number>> = { stsd: 16, hvc1: 8 + 78 };

/** The offsets of the boxes along `names` from the file's top (moov ... hvc1). */
function boxPath(data: Buffer, names: readonly string[]): number[] {
  const offsets: number[] = [];
  let [start, end] = [0, data.length];
  for (const name of names) {
    let at = start;
    while (at < end && data.toString('latin1', at + 4, at + 8) !== name) at += data.readUInt32BE(at);
    if (at >= end) throw new Error(`no ${name} box in the test clip`);
    offsets.push(at);
    [start, end] = [at + (CHILDREN_AT[name] ?? 8), at + data.readUInt32BE(at)];
  }
  return offsets;
}

/** An HEVC MP4 (moov after mdat, so no chunk offset moves) given a Dolby Vision configuration record. */
function withDolbyVision(mp4: Buffer, profile: number, compatibility: number): Buffer {
  const path = boxPath(mp4, ['moov', 'trak', 'mdia', 'minf', 'stbl', 'stsd', 'hvc1']);
  const entry = path.at(-1) ?? 0;
  const level = 1;
  // dvcC: version 1.0; profile(7) level(6) rpu(1) el(1) bl(1); compatibility id(4); reserved.
  const record = Buffer.alloc(24);
  record.set([1, 0, (profile << 1) | (level >> 5), ((level & 31) << 3) | 0b101, compatibility << 4]);
  const box = Buffer.concat([Buffer.from([0, 0, 0, 32]), Buffer.from('dvcC', 'latin1'), record]);
  const end = entry + mp4.readUInt32BE(entry);
  const out = Buffer.concat([mp4.subarray(0, end), box, mp4.subarray(end)]);
  for (const offset of path) out.writeUInt32BE(out.readUInt32BE(offset) + box.length, offset);
  out.write('dvh1', entry + 4, 'latin1');
  return out;
}

let dir: string;
let cleanup: () => Promise<void>;
let profile5: string;
let profile84: string;

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('dolby-vision'));
  const base = await makeClip(join(dir, 'base.mp4'), {
    seconds: 0.4,
    rate: 10,
    codec: ['-c:v', 'libx265', '-x265-params', 'log-level=none', '-pix_fmt', 'yuv420p10le', '-tag:v', 'hvc1'],
    extra: ['-color_primaries', 'bt2020', '-colorspace', 'bt2020nc', '-color_trc', 'arib-std-b67'],
  });
  const bytes = await readFile(base);
  profile5 = join(dir, 'dv5.mp4');
  profile84 = join(dir, 'dv84.mp4');
  await writeFile(profile5, withDolbyVision(bytes, 5, 0));
  await writeFile(profile84, withDolbyVision(bytes, 8, 4));
  // Both stay playable: ffmpeg decodes every frame of the edited file.
  await ffmpeg(['-i', profile5, '-f', 'null', '-']);
});

afterAll(async () => cleanup());

/** The real probe behind the quote, the file already local. */
const localDeps: QuoteDeps = {
  async localize(source: string, _kind: InputKind) {
    return { path: source, bytes: 0, source };
  },
  probeImage: () => Promise.reject(new Error('no image here')),
  probeMedia: (path) => probeMedia(path),
};

describe('Dolby Vision at the quote', () => {
  it('reads the configuration record from the stream', async () => {
    expect((await probeMedia(profile5)).video?.dolbyVision).toEqual({ profile: 5, compatibility: 0 });
    expect((await probeMedia(profile84)).video?.dolbyVision).toEqual({ profile: 8, compatibility: 4 });
  });

  it.each([
    ['upscale-video', { video_url: '' }],
    ['lipsync', { video_url: '', audio_url: '/nowhere.mp3' }],
  ] as const)(
    'refuses profile 5 for %s with PROBE_FAILED, naming the format, before any other input is fetched',
    async (tool, body) => {
      const job = normaliseToolBody(tool, { ...body, video_url: profile5 });
      const fetched: string[] = [];
      const deps: QuoteDeps = {
        ...localDeps,
        localize: async (source, kind) => (fetched.push(kind), localDeps.localize(source, kind)),
      };
      const err = await quoteJob(job, deps).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(JobError);
      expect((err as JobError).code).toBe('PROBE_FAILED');
      expect((err as JobError).message).toBe(
        'Dolby Vision profile 5 without an HDR10, SDR or HLG base layer is not supported: export the video as HDR10, HLG or SDR',
      );
      expect(fetched).toEqual(['video']);
    },
  );

  it('quotes profile 8.4 (HLG base layer) like the HLG video it carries', async () => {
    const quoted = await quoteJob(normaliseToolBody('upscale-video', { video_url: profile84 }), localDeps);
    expect(quoted.quote.creditsUsed).toBeGreaterThan(0);
  });
});
