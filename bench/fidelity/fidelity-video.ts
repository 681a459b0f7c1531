/**
 * The video half of `bench:fidelity`: the corpus of bench/fidelity/fidelity-video-corpus.ts through the real
 * upscale pipeline (the small x2 network, as the tests use), one FidelityRow per case:
 *
 * - deltaE2000: the output brought back to the input's displayed size (area average) against the
 *   input, both decoded to 16-bit RGB with their own matrices, over the patches' interiors (the
 *   chart's flat 8x8 patches less a 2-pixel border, where upscaling edges is the network's job), in
 *   the input's colour space: SDR as BT.709 / sRGB; PQ through its EOTF and HLG through its inverse
 *   OETF, relative to a reference white of 203 cd/m² (BT.2408), then BT.2020 to L*a*b*. A tone-mapped
 *   result is read as BT.709 SDR against the HDR input: its difference is the tone mapping's.
 * - avOffsetMs: (first video time - first audio time) of the output less the input's.
 * - bit depth and streams in and out, as ffprobe reports them.
 *
 * Run directly (`npx tsc -p tsconfig.json && node dist/bench/fidelity/fidelity-video.js [--no-rows] [--timing] [--repeat 5] [--only sdr,hdr]`)
 * it prints the rows; `--timing` also measures (a) the 8-bit SDR streaming wall time of the same
 * clip with main's build (/work/main/dist, or --before DIR) and this one, alternating, and (b) the
 * HDR path (hdr "keep") against the SDR path (hdr "sdr", tone-mapped) on the same HDR10 clip, for the
 * upscale and (`--only lipsync`, or with the others: `--only sdr,hdr,lipsync`) for lip-sync.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import {
  SessionCache,
  createSrModelLoader,
  parseSrModelChoices,
  type SrModelLoader,
} from '../../src/inference/index.js';
import { type MediaInfo, probeMedia, resolveFfmpeg } from '../../src/media/index.js';
import { type VideoUpscaleOutcome, upscaleVideoFile } from '../../src/kinds/video-upscale/pipeline/index.js';
import {
  lipsyncFile,
  parseLipsyncModelMapping,
  releaseLipsyncThreads,
} from '../../src/kinds/lipsync/pipeline/index.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../src/paths.js';
import { type HdrMode, videoResultFormat } from '../../src/video/index.js';
import { meanCiede2000 } from './colour-difference.js';
import { PATCH, makeVideoCorpus, type VideoCorpus } from './fidelity-video-corpus.js';
import type { FidelityRow } from './fidelity-row.js';
import { benchCli } from '../harness.js';
import { type FileFacts, fileFacts, packetTimes, pictureOf, streamLabels } from './video-facts.js';

const run = promisify(execFile);

/** The models the tests use: small and fast, so the benchmark measures fidelity, not the network. */
const MODEL_CHOICES = 'video=esrgan-slim-x2,video:4=esrgan-slim-x4';

interface Case {
  name: string;
  input: (corpus: VideoCorpus) => string;
  factor: '1' | '2';
  hdr?: HdrMode;
}

const CASES: readonly Case[] = [
  { name: 'hdr10-hevc-pq-rotated', input: (c) => c.hdr10, factor: '2' },
  { name: 'hdr10-hevc-pq-to-sdr', input: (c) => c.hdr10, factor: '2', hdr: 'sdr' },
  { name: 'hlg-hevc-10bit', input: (c) => c.hlg, factor: '2' },
  { name: 'vfr-30-then-15fps', input: (c) => c.vfr, factor: '2' },
  { name: 'mkv-2-audio-srt-chapters', input: (c) => c.tracks, factor: '2' },
  { name: 'mkv-pgs-dvb-font-hdr10', input: (c) => c.bitmaps, factor: '2' },
  { name: 'odd-321x181-factor-1', input: (c) => c.odd, factor: '1' },
  { name: 'ramp-10bit-pq', input: (c) => c.ramp10, factor: '2' },
];

type Transfer = 'sdr' | 'pq' | 'hlg';

function transferOf(facts: FileFacts): Transfer {
  const t = pictureOf(facts).color_transfer;
  return t === 'smpte2084' ? 'pq' : t === 'arib-std-b67' ? 'hlg' : 'sdr';
}

const REFERENCE_WHITE = 203;

/** PQ code value (0..1) to linear light relative to reference white. */
function pqToRelative(v: number): number {
  const m1 = 2610 / 16384;
  const m2 = (2523 / 4096) * 128;
  const c1 = 3424 / 4096;
  const c2 = (2413 / 4096) * 32;
  const c3 = (2392 / 4096) * 32;
  const p = Math.max(v, 0) ** (1 / m2);
  return (10_000 * (Math.max(p - c1, 0) / (c2 - c3 * p)) ** (1 / m1)) / REFERENCE_WHITE;
}

/** HLG signal (0..1) to scene light, 1 at the signal level of reference white (0.75). */
function hlgToRelative(v: number): number {
  const a = 0.17883277;
  const b = 1 - 4 * a;
  const c = 0.5 - a * Math.log(4 * a);
  const scene = (x: number): number => (x <= 0.5 ? (x * x) / 3 : (Math.exp((x - c) / a) + b) / 12);
  return scene(v) / scene(0.75);
}

/**
 * RGB 16-bit samples re-encoded so that meanCiede2000's `bt2020` reading (BT.1886, gamma 2.4) gives
 * the linear light the transfer means: the PQ / HLG curves folded into the values.
 */
function asGamma24(values: Uint16Array, transfer: Exclude<Transfer, 'sdr'>): Float64Array {
  const toLinear = transfer === 'pq' ? pqToRelative : hlgToRelative;
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i += 1) out[i] = toLinear(values[i]! / 65535) ** (1 / 2.4);
  return out;
}

/** The first frame as 16-bit RGB at `width` x `height` (area average), read with the file's own matrix. */
async function rgb48(path: string, width: number, height: number): Promise<Uint16Array> {
  const { stdout } = await run(
    resolveFfmpeg(),
    [
      '-v',
      'error',
      '-i',
      path,
      '-frames:v',
      '1',
      '-vf',
      `scale=w=${width}:h=${height}:flags=area+accurate_rnd+full_chroma_int:in_color_matrix=auto,format=rgb48le`,
      '-f',
      'rawvideo',
      'pipe:1',
    ],
    { encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 },
  );
  const copy = new Uint16Array(stdout.byteLength / 2);
  Buffer.from(copy.buffer).set(stdout);
  return copy;
}

/** The pixels inside each chart patch, 2 pixels away from its edges. */
function patchInteriors(values: ArrayLike<number>, width: number, height: number): number[] {
  const kept: number[] = [];
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const [px, py] = [x % PATCH, y % PATCH];
      if (px < 2 || px >= PATCH - 2 || py < 2 || py >= PATCH - 2) continue;
      const i = 3 * (y * width + x);
      kept.push(values[i]!, values[i + 1]!, values[i + 2]!);
    }
  }
  return kept;
}

async function deltaE(
  input: string,
  output: string,
  inFacts: FileFacts,
  outFacts: FileFacts,
  displayed: { width: number; height: number },
): Promise<number> {
  const { width, height } = displayed;
  const [a, b] = [await rgb48(input, width, height), await rgb48(output, width, height)];
  const [tin, tout] = [transferOf(inFacts), transferOf(outFacts)];
  if (tin === 'sdr' && tout === 'sdr') {
    return meanCiede2000(patchInteriors(a, width, height), patchInteriors(b, width, height), {
      channels: 3,
      space: 'srgb',
      maxValue: 65535,
    });
  }
  // HDR on either side: both as linear light relative to reference white, in BT.2020 (an SDR
  // output's BT.709 values are read through BT.1886, which the bt2020 reading applies; its BT.709
  // primaries inside BT.2020 are ignored, a small error next to the tone mapping's).
  const linearA = tin === 'sdr' ? Float64Array.from(a, (v) => v / 65535) : asGamma24(a, tin);
  const linearB = tout === 'sdr' ? Float64Array.from(b, (v) => v / 65535) : asGamma24(b, tout);
  return meanCiede2000(patchInteriors(linearA, width, height), patchInteriors(linearB, width, height), {
    channels: 3,
    space: 'bt2020',
    maxValue: 1,
  });
}

async function avOffsetMs(input: string, output: string): Promise<number | undefined> {
  const [vin, ain, vout, aout] = await Promise.all([
    packetTimes(input, 'v:0'),
    packetTimes(input, 'a:0'),
    packetTimes(output, 'v:0'),
    packetTimes(output, 'a:0'),
  ]);
  if (vin.length === 0 || ain.length === 0 || vout.length === 0 || aout.length === 0) return undefined;
  return Math.round((vout[0]! - aout[0]! - (vin[0]! - ain[0]!)) * 10_000) / 10;
}

/** Upscales `input` to `stem` + the extension of its result's container. */
async function upscaleCase(
  input: string,
  stem: string,
  factor: '1' | '2',
  loadModel: SrModelLoader,
  hdr?: HdrMode,
): Promise<{ info: MediaInfo; outcome: VideoUpscaleOutcome }> {
  const info = await probeMedia(input);
  const outcome = await upscaleVideoFile(
    {
      inputPath: input,
      outputPath: `${stem}.${videoResultFormat(info.container).ext}`,
      factor,
      info,
      ...(hdr === undefined ? {} : { hdr }),
    },
    loadModel,
  );
  return { info, outcome };
}

export async function videoFidelityRows(): Promise<FidelityRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'mw-bench-fidelity-video-'));
  const sessions = new SessionCache({ executionProviders: ['cpu'] });
  try {
    const loadModel = createSrModelLoader({ sessions, choices: parseSrModelChoices(MODEL_CHOICES) });
    const corpus = await makeVideoCorpus(dir);
    const rows: FidelityRow[] = [];
    for (const [i, c] of CASES.entries()) {
      const input = c.input(corpus);
      const { info, outcome } = await upscaleCase(input, join(dir, `out-${i}`), c.factor, loadModel, c.hdr);
      const output = outcome.outputPath;
      const [inFacts, outFacts] = [await fileFacts(input), await fileFacts(output)];
      const video = info.video!;
      const quarter = video.rotation === 90 || video.rotation === 270;
      const displayed = quarter
        ? { width: video.height, height: video.width }
        : { width: video.width, height: video.height };
      const row: FidelityRow = {
        case: c.name,
        deltaE2000: Math.round((await deltaE(input, output, inFacts, outFacts, displayed)) * 100) / 100,
        bitDepthIn: pictureOf(inFacts).bits ?? 8,
        bitDepthOut: pictureOf(outFacts).bits ?? 8,
        streamsIn: streamLabels(inFacts),
        streamsOut: streamLabels(outFacts),
        notes: [
          `${pictureOf(inFacts).color_transfer ?? 'untagged'} -> ${pictureOf(outFacts).color_transfer ?? 'untagged'}`,
          `${displayed.width}x${displayed.height} -> ${outcome.width}x${outcome.height}`,
          `${video.frameCount ?? '?'} frames -> ${outcome.frames} at ${outcome.frameRate}`,
          ...(outFacts.chapters.length > 0 ? [`${outFacts.chapters.length} chapters`] : []),
          ...(outcome.streams.dropped.length > 0
            ? [`dropped ${outcome.streams.dropped.map((d) => `${d.codec} (${d.reason})`).join(', ')}`]
            : []),
          outcome.format.ext,
        ].join('; '),
      };
      const offset = await avOffsetMs(input, output);
      if (offset !== undefined) row.avOffsetMs = offset;
      rows.push(row);
    }
    return rows;
  } finally {
    await sessions.release();
    await rm(dir, { recursive: true, force: true });
  }
}

type Upscale = typeof upscaleVideoFile;
type Loader = typeof createSrModelLoader;
type Sessions = typeof SessionCache;

/** CPU seconds of this process (all its threads) and of its reaped children (the ffmpeg processes), from /proc. */
function cpuSeconds(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  // After the command: state is field 3; utime, stime, cutime, cstime are fields 14 to 17.
  const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
  return ticks / 100;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * (a) The 8-bit SDR path before (another build's dist, main's by default) and after, alternating on
 * one clip; (b) hdr "keep" against hdr "sdr" on one HDR10 clip. Streaming wall times (ms).
 */
/** The video pipeline's entry in a build: under src/kinds/ since the kinds got their folders, src/upscale/ before. */
async function videoPipelineOf(dist: string): Promise<string> {
  const now = join(dist, 'src/kinds/video-upscale/pipeline/index.js');
  return (await stat(now).catch(() => undefined)) ? now : join(dist, 'src/upscale/index.js');
}

async function timing(beforeDist: string, reps: number, only: readonly string[]): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'mw-bench-fidelity-timing-'));
  const before = {
    upscale: ((await import(pathToFileURL(await videoPipelineOf(beforeDist)).href)) as { upscaleVideoFile: Upscale })
      .upscaleVideoFile,
    inference: (await import(pathToFileURL(join(beforeDist, 'src/inference/index.js')).href)) as {
      SessionCache: Sessions;
      createSrModelLoader: Loader;
      parseSrModelChoices: typeof parseSrModelChoices;
    },
    probe: (
      (await import(pathToFileURL(join(beforeDist, 'src/media/index.js')).href)) as { probeMedia: typeof probeMedia }
    ).probeMedia,
  };
  const sessionsAfter = new SessionCache({ executionProviders: ['cpu'] });
  const sessionsBefore = new before.inference.SessionCache({ executionProviders: ['cpu'] });
  const lipSessions = new SessionCache({ thread: false, threads: 1 });
  try {
    const loadAfter = createSrModelLoader({ sessions: sessionsAfter, choices: parseSrModelChoices(MODEL_CHOICES) });
    const loadBefore = before.inference.createSrModelLoader({
      sessions: sessionsBefore,
      choices: before.inference.parseSrModelChoices(MODEL_CHOICES),
    });
    const sdr = join(dir, 'sdr.mp4');
    const hdr = join(dir, 'hdr10.mp4');
    const ff = (args: string[]): Promise<unknown> => run(resolveFfmpeg(), ['-v', 'error', '-y', ...args]);
    const source = [
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=160x90:rate=24:duration=5',
      '-f',
      'lavfi',
      '-i',
      'sine=frequency=440:sample_rate=48000:duration=5',
    ];
    await ff([...source, '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-c:a', 'aac', sdr]);
    await ff([
      ...source,
      '-c:v',
      'libx265',
      '-preset',
      'veryfast',
      '-pix_fmt',
      'yuv420p10le',
      '-x265-params',
      'log-level=error:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:max-cll=1000,400',
      '-color_primaries',
      'bt2020',
      '-color_trc',
      'smpte2084',
      '-colorspace',
      'bt2020nc',
      '-c:a',
      'aac',
      hdr,
    ]);
    const [infoSdrBefore, infoSdr, infoHdr] = [await before.probe(sdr), await probeMedia(sdr), await probeMedia(hdr)];
    // Lip-sync: the astronaut (a face BlazeFace finds) as a 256x256 HDR10 clip of 2 s with speech,
    // the generated wav2lip-test network; its wall time from start to the encoder's exit.
    const face = join(dir, 'face-hdr10.mp4');
    const speech = resolve('test/kinds/lipsync/pipeline/fixtures/speech-16k.wav');
    if (only.includes('lipsync')) {
      await ff([
        '-loop',
        '1',
        '-framerate',
        '25',
        '-i',
        DEFAULT_SAMPLE_IMAGE,
        '-i',
        speech,
        '-t',
        '2',
        '-vf',
        'scale=256:256,format=yuv420p10le',
        '-c:v',
        'libx265',
        '-preset',
        'veryfast',
        '-x265-params',
        'log-level=error:colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc:max-cll=1000,400',
        '-color_primaries',
        'bt2020',
        '-color_trc',
        'smpte2084',
        '-colorspace',
        'bt2020nc',
        '-c:a',
        'aac',
        face,
      ]);
    }
    const lipDeps = { sessions: lipSessions, lipsyncModelMapping: parseLipsyncModelMapping('wav2lip-test') };
    const lipsync = async (mode: HdrMode, output: string): Promise<number> => {
      const [videoInfo, audioInfo] = [await probeMedia(face), await probeMedia(speech)];
      const request = {
        videoPath: face,
        videoInfo,
        audioPath: speech,
        audioInfo,
        outputPath: join(dir, output),
        model: 'vendor-lipsync-2' as const,
        syncMode: 'cut_off' as const,
        activeSpeaker: false,
        hdr: mode,
      };
      return (await lipsyncFile(request, lipDeps)).stats.wallMs;
    };
    type Key = 'before' | 'after' | 'keep' | 'toSdr' | 'lipKeep' | 'lipSdr';
    const wall: Record<Key, number[]> = { before: [], after: [], keep: [], toSdr: [], lipKeep: [], lipSdr: [] };
    const cpu: Record<Key, number[]> = { before: [], after: [], keep: [], toSdr: [], lipKeep: [], lipSdr: [] };
    const once: Record<Key, () => Promise<number>> = {
      before: async () =>
        (
          await before.upscale(
            { inputPath: sdr, outputPath: join(dir, 'b.mp4'), factor: '2', info: infoSdrBefore },
            loadBefore,
          )
        ).streamMs,
      after: async () =>
        (
          await upscaleVideoFile(
            { inputPath: sdr, outputPath: join(dir, 'a.mp4'), factor: '2', info: infoSdr },
            loadAfter,
          )
        ).streamMs,
      keep: async () =>
        (
          await upscaleVideoFile(
            { inputPath: hdr, outputPath: join(dir, 'k.mp4'), factor: '2', info: infoHdr, hdr: 'keep' },
            loadAfter,
          )
        ).streamMs,
      toSdr: async () =>
        (
          await upscaleVideoFile(
            { inputPath: hdr, outputPath: join(dir, 's.mp4'), factor: '2', info: infoHdr, hdr: 'sdr' },
            loadAfter,
          )
        ).streamMs,
      lipKeep: () => lipsync('keep', 'lip-keep.mp4'),
      lipSdr: () => lipsync('sdr', 'lip-sdr.mp4'),
    };
    const pairs: [Key, Key][] = [
      ...(only.includes('sdr') ? [['before', 'after'] as [Key, Key]] : []),
      ...(only.includes('hdr') ? [['keep', 'toSdr'] as [Key, Key]] : []),
      ...(only.includes('lipsync') ? [['lipKeep', 'lipSdr'] as [Key, Key]] : []),
    ];
    // One warm-up of each, not counted (model load, first-call costs).
    for (const [a, b] of pairs) {
      await once[a]();
      await once[b]();
    }
    for (let r = 0; r < reps; r += 1) {
      for (const [a, b] of pairs) {
        for (const key of r % 2 === 0 ? [a, b] : [b, a]) {
          const cpuBefore = cpuSeconds();
          wall[key].push(await once[key]());
          cpu[key].push((cpuSeconds() - cpuBefore) * 1000);
        }
      }
    }
    const line = (label: string, key: Key): string =>
      `${label.padEnd(40)} wall median ${median(wall[key]).toFixed(0).padStart(6)} ms, min ${Math.min(...wall[key])
        .toFixed(0)
        .padStart(6)} ms; ` +
      `CPU median ${median(cpu[key]).toFixed(0).padStart(6)} ms, min ${Math.min(...cpu[key])
        .toFixed(0)
        .padStart(6)} ms  (wall ${wall[key].map((v) => v.toFixed(0)).join(', ')})`;
    const ratio = (a: Key, b: Key): string =>
      `wall median ${(median(wall[a]) / median(wall[b])).toFixed(3)}, min ${(Math.min(...wall[a]) / Math.min(...wall[b])).toFixed(3)}; ` +
      `CPU median ${(median(cpu[a]) / median(cpu[b])).toFixed(3)}, min ${(Math.min(...cpu[a]) / Math.min(...cpu[b])).toFixed(3)}`;
    process.stdout.write(
      `\nStreaming, 160x90 24 fps 5 s (120 frames), x2 esrgan-slim-x2, ${reps} alternating runs (CPU: this process and its ffmpeg children)\n`,
    );
    if (only.includes('sdr')) {
      process.stdout.write(
        `${line(`8-bit SDR before (${beforeDist})`, 'before')}\n${line('8-bit SDR after (this build)', 'after')}\n  after / before: ${ratio('after', 'before')}\n`,
      );
    }
    if (only.includes('hdr')) {
      process.stdout.write(
        `${line('HDR10 clip, hdr "keep" (16-bit, x265)', 'keep')}\n${line('HDR10 clip, hdr "sdr" (tone-mapped, x264)', 'toSdr')}\n  keep / sdr: ${ratio('keep', 'toSdr')}\n`,
      );
    }
    if (only.includes('lipsync')) {
      process.stdout.write(
        `\nLip-sync, 256x256 HDR10 25 fps 2 s (50 frames), wav2lip-test, ${reps} alternating runs (wall: lipsyncFile's own)\n` +
          `${line('lip-sync hdr "keep" (16-bit, x265)', 'lipKeep')}\n${line('lip-sync hdr "sdr" (tone-mapped, x264)', 'lipSdr')}\n  keep / sdr: ${ratio('lipKeep', 'lipSdr')}\n`,
      );
    }
  } finally {
    await releaseLipsyncThreads();
    await lipSessions.release();
    await sessionsAfter.release();
    await sessionsBefore.release();
    await rm(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const cli = benchCli({
    name: 'fidelity-video',
    options: {
      timing: { type: 'boolean', help: 'also time the 8-bit path against --before, and HDR against SDR' },
      before: { type: 'string', arg: 'DIST', help: "another build's dist/ for --timing", default: '/work/main/dist' },
      only: { type: 'string', arg: 'sdr,hdr,lipsync', help: 'the timings run', default: 'sdr,hdr,lipsync' },
      'no-rows': { type: 'boolean', help: 'leave out the fidelity rows' },
    },
    common: { repeat: { default: '5', help: 'alternating runs of each timing' } },
  });
  const { values } = cli;
  const rows = values['no-rows'] ? [] : await videoFidelityRows();
  for (const row of rows) {
    process.stdout.write(
      `${row.case.padEnd(26)} dE00 ${String(row.deltaE2000 ?? '-').padStart(5)}  A/V ${String(row.avOffsetMs ?? '-').padStart(5)} ms  bits ${row.bitDepthIn}->${row.bitDepthOut}  ` +
        `streams ${row.streamsIn.join(',')} -> ${row.streamsOut.join(',')}  (${row.notes ?? ''})\n`,
    );
  }
  if (values.timing) await timing(resolve(values.before), Number(values.repeat), values.only.split(','));
  await cli.done({ data: { rows } });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
