/**
 * Matroska in, Matroska out (docs/contract.md, "Video fidelity"): the corpus's Matroska clip with
 * what MP4 cannot carry (bitmap PGS and DVB subtitles, Opus and FLAC, a font attachment) through the
 * real upscale pipeline, real ffmpeg and the small x2 network; the result is checked with ffprobe:
 * every stream with its codec, language, title and dispositions, the attachment's bytes, chapters,
 * the cover (an image attachment) byte for byte, tags without location (global and per stream),
 * HDR10 side data, and the audio copied untouched.
 */
import { execFile } from 'node:child_process';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionCache, createSrModelLoader, parseSrModelChoices } from '../../../../src/inference/index.js';
import { probeMedia, resolveFfmpeg } from '../../../../src/media/index.js';
import { type VideoUpscaleOutcome, upscaleVideoFile } from '../../../../src/kinds/video-upscale/pipeline/index.js';
import { CORPUS_FONT, type VideoCorpus, makeVideoCorpus } from '../../../../bench/fidelity/fidelity-video-corpus.js';
import {
  type FileFacts,
  fileFacts,
  packetTimes,
  pictureOf,
  streamLabels,
} from '../../../../bench/fidelity/video-facts.js';
import { expectCorpusHdr10Metadata } from '../../../helpers/hdr10-metadata.js';
import { makeTempDir } from '../../../media/helpers.js';

const run = promisify(execFile);
const sessions = new SessionCache({ executionProviders: ['cpu'] });
const loadModel = createSrModelLoader({ sessions, choices: parseSrModelChoices('video=esrgan-slim-x2') });

let dir: string;
let cleanup: () => Promise<void>;
let corpus: VideoCorpus;
let outcome: VideoUpscaleOutcome;
let out: FileFacts;

beforeAll(async () => {
  ({ dir, cleanup } = await makeTempDir('matroska-fidelity'));
  corpus = await makeVideoCorpus(dir);
  outcome = await upscaleVideoFile(
    {
      inputPath: corpus.bitmaps,
      outputPath: join(dir, 'out.mkv'),
      factor: '2',
      info: await probeMedia(corpus.bitmaps),
    },
    loadModel,
  );
  out = await fileFacts(outcome.outputPath);
}, 180_000);

afterAll(async () => {
  await sessions.release();
  await cleanup();
});

/** Each stream's codec, language, title and the dispositions set, in order. */
function described(facts: FileFacts): string[] {
  return facts.streams
    .filter((s) => !(s.codec_type === 'video' && s.disposition['attached_pic'] === 1))
    .map((s) => {
      const set = Object.entries(s.disposition)
        .filter(([, v]) => v === 1)
        .map(([k]) => k);
      return [s.codec_type, s.codec_name, s.tags['language'] ?? '-', s.tags['title'] ?? '-', set.join('+') || '-'].join(
        ' ',
      );
    });
}

describe('Matroska in, Matroska out', () => {
  it('writes Matroska, says so in the outcome, and keeps every audio and subtitle track with its language, title and dispositions', async () => {
    const input = await fileFacts(corpus.bitmaps);
    expect(outcome.format).toEqual({ container: 'mkv', ext: 'mkv', mediaType: 'video/x-matroska' });
    const { stdout } = await run('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'format=format_name',
      '-of',
      'default=nw=1:nk=1',
      outcome.outputPath,
    ]);
    expect(stdout.trim()).toBe('matroska,webm');
    expect(streamLabels(input)).toEqual([
      'v:hevc(10)',
      'a:opus(eng)',
      'a:flac(fra)',
      's:hdmv_pgs_subtitle(eng)',
      's:dvb_subtitle(deu)',
      's:subrip(fra)',
      't:ttf',
      'cover:png',
    ]);
    expect(streamLabels(out)).toEqual(streamLabels(input));
    // Everything but the picture (upscaled) as it went in.
    expect(described(out).slice(1)).toEqual(described(input).slice(1));
    expect(described(out)[3]).toBe('subtitle hdmv_pgs_subtitle eng Signs forced');
    expect(outcome.streams).toEqual({ kept: 7, dropped: [] });
  });

  it('copies audio and subtitles untouched and in sync: the same packets at the same times, relative to the picture', async () => {
    // ffmpeg shifts a file whose first packet is before 0 (Opus's pre-skip) by that much, every
    // stream alike but Opus, whose codec delay Matroska's reader takes off again: Opus may move by
    // up to its pre-skip (6.5 ms, under a third of a 24 fps frame); everything else stays to the millisecond.
    const sinceVideo = async (path: string, stream: string): Promise<number[]> => {
      const first = (await packetTimes(path, 'v:0'))[0]!;
      return (await packetTimes(path, stream)).map((t) => t - first);
    };
    for (const stream of ['a:0', 'a:1', 's:0', 's:1', 's:2']) {
      const [before, after] = [await sinceVideo(corpus.bitmaps, stream), await sinceVideo(outcome.outputPath, stream)];
      expect(after, stream).toHaveLength(before.length);
      const tolerance = stream === 'a:0' ? 0.0075 : 0.0015;
      after.forEach((t, i) => expect(Math.abs(t - before[i]!), `${stream} packet ${i}`).toBeLessThan(tolerance));
    }
    const chapters = async (path: string): Promise<number[]> => {
      const first = (await packetTimes(path, 'v:0'))[0]!;
      return (await fileFacts(path)).chapters.map((c) => c.start - first);
    };
    const [before, after] = [await chapters(corpus.bitmaps), await chapters(outcome.outputPath)];
    after.forEach((t, i) => expect(Math.abs(t - before[i]!)).toBeLessThan(0.0015));
  });

  it('keeps the font attachment byte for byte, with its name and media type', async () => {
    const font = out.streams.find((s) => s.codec_type === 'attachment');
    expect(font?.tags).toMatchObject({ filename: CORPUS_FONT.name, mimetype: CORPUS_FONT.mimetype });
    await run(
      resolveFfmpeg(),
      ['-v', 'error', '-y', '-dump_attachment:t:0', join(dir, 'dumped.ttf'), '-i', outcome.outputPath],
      { cwd: dir },
    ).catch(() => undefined); // ffmpeg exits 1: no output file named
    expect(await readFile(join(dir, 'dumped.ttf'))).toEqual(CORPUS_FONT.bytes);
  });

  it('keeps the cover as the image attachment it came as, byte for byte, not upscaled', async () => {
    const cover = out.streams.find((s) => s.disposition['attached_pic'] === 1);
    expect(cover).toMatchObject({
      codec_name: 'png',
      width: 32,
      height: 32,
      tags: { filename: 'cover.png', mimetype: 'image/png' },
    });
    const dumped = join(dir, 'cover-out.png');
    await run(resolveFfmpeg(), [
      '-v',
      'error',
      '-y',
      '-i',
      outcome.outputPath,
      '-map',
      `0:${cover!.index}`,
      '-c',
      'copy',
      '-frames:v',
      '1',
      '-f',
      'image2',
      dumped,
    ]);
    expect(await readFile(dumped)).toEqual(await readFile(join(dir, 'cover.png')));
    // Nothing left beside the result (the extracted cover, the partial file).
    expect((await readdir(dir)).filter((name) => name.startsWith('.out.mkv'))).toEqual([]);
  });

  it('keeps chapters and the title; removes location from the file and from every stream', () => {
    expect(out.chapters.map((c) => c.title)).toEqual(['Opening', 'Ending']);
    expect(out.tags['title']).toBe('Fidelity corpus');
    expect(out.tags['creation_time']).toMatch(/^2024-05-01T10:20:30/);
    const located = (tags: Record<string, string>): string[] => Object.keys(tags).filter((k) => /location/i.test(k));
    expect(located(out.tags)).toEqual([]);
    for (const s of out.streams) expect(located(s.tags), `stream ${s.index}`).toEqual([]);
    // The input had both, so the test can fail.
    expect(out.streams[1]?.tags['title']).toBe('Main');
  });

  it('HDR10 survives: HEVC Main10 with BT.2020 / PQ tags and the mastering display and MaxCLL', async () => {
    const video = pictureOf(out);
    expect(video).toMatchObject({
      codec_name: 'hevc',
      pix_fmt: 'yuv420p10le',
      color_primaries: 'bt2020',
      color_space: 'bt2020nc',
      color_transfer: 'smpte2084',
      width: 128,
      height: 96,
    });
    expect(video.profile).toBe('Main 10');
    await expectCorpusHdr10Metadata(outcome.outputPath);
  });
});
