/**
 * Lip-sync pipeline benchmark: what everything except the lip-sync network costs per frame at 720p
 * (decode, face detection, audio features, crop, paste, encode), and how much of the wall time is
 * left to the network.
 *
 * Input: a 1280x720 talking-head clip made at the start from a real photo (the astronaut, scaled
 * up, drifting a few pixels a frame so every frame differs) with real speech (espeak-ng when
 * installed, else the test fixture looped), H.264 + AAC in MP4, in a temp directory removed at
 * the end.
 *
 * Runs (sync mode cut_off, vendor-lipsync-2, the generated wav2lip-test network):
 *   A  the pipeline as it is, every lip-sync batch recorded;
 *   M  the network alone on the recorded batches (model-only time);
 *   S  stage by stage in isolation: full-size decode, face pass (and its parts), audio features, encode;
 *   B  the network on the calling thread (modelThread: false) plus a stand-in cost of --model-ms
 *      per face that blocks it, as an ONNX Runtime session on the calling thread does;
 *   C  the network on its worker thread (the default) plus the same stand-in cost as a wait, as a
 *      busy worker thread or device is to the main thread.
 * B and C run twice each, alternating: the face pass first (overlapFacePass: false: detection of
 * the whole clip before the output pass) and beside the output pass (the default: faces decided
 * 2 s behind detection, face-schedule.ts); the fastest of --repeat runs of each is reported.
 * The test network takes well under a millisecond per face, so B and C show whether the other
 * stages hide behind a network of realistic cost. --model-ms defaults to 25: an assumption for a
 * real Wav2Lip (96x96 GAN generator, ~36 M parameters) on a multi-core CPU, no measurement (no
 * real weights can be had here); pass another value to see another network.
 *
 *   media-worker bench lipsync --help
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { SessionCache } from '../../src/inference/index.js';
import {
  findOnPath,
  probeMedia,
  resolveFfmpeg,
  runProcess,
  spawnProcess,
  type MediaInfo,
} from '../../src/media/index.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../src/paths.js';
import {
  DEFAULT_ENCODER,
  inputMatrix,
  displayedSize,
  frameTiming,
  probeVideoExtras,
  endPipe,
  writeWithBackpressure,
} from '../../src/video/index.js';
import {
  captureFacePatch,
  loadBlazeFace,
  lipsyncEncoderArgs,
  detectionSize,
  runFacePass,
  decodeAudio,
  FACE_DETECTION_PROFILES,
  frameThumbnail,
  melChunk,
  melSpectrogram,
  lipsyncFile,
  type LipsyncOutcome,
  ffmpegFrameStream,
  sourceDecoderArgs,
  type SourceDecodeSpec,
  type RgbFrame,
  loadThreadedLipsyncModel,
  releaseLipsyncThreads,
  loadLipsyncModel,
  parseLipsyncModelMapping,
  type LipsyncModel,
} from '../../src/kinds/lipsync/pipeline/index.js';
import { TABLES } from '../blocks.js';
import { describeMachine, machineInfo } from '../common.js';
import { benchCli } from '../harness.js';
import { type DocTable, docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'lipsync',
  options: {
    size: { type: 'string', arg: 'WxH', help: "the talking-head clip's size", default: '1280x720' },
    fps: { type: 'string', arg: 'N', help: 'its frame rate', default: '25' },
    seconds: { type: 'string', arg: 'S', help: 'its length', default: '10' },
    'model-ms': {
      type: 'string',
      arg: 'MS',
      help: 'runs B and C: the stand-in cost of a real lip-sync network per face',
      default: '25',
    },
    batch: { type: 'string', arg: 'N', help: 'faces per lip-sync network call', default: '16' },
    only: {
      type: 'string',
      arg: 'A,S,B,C',
      help: 'the runs (A pipeline, S stages, B calling thread, C worker thread)',
      default: 'A,S,B,C',
    },
  },
  common: { threads: { default: '0' }, repeat: { default: '1' } },
});
const values = cli.values;

const [width, height] = (values.size ?? '').split('x').map(Number) as [number, number];
if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
  throw new RangeError(`Expected --size as WIDTHxHEIGHT but received ${JSON.stringify(values.size)}`);
}
const fps = positive('fps', values.fps);
const seconds = Number(values.seconds);
if (!(seconds > 0))
  throw new RangeError(`Expected --seconds to be a positive number but received ${JSON.stringify(values.seconds)}`);
const modelMs = Number(values['model-ms']);
if (!(modelMs >= 0))
  throw new RangeError(
    `Expected --model-ms to be a non-negative number but received ${JSON.stringify(values['model-ms'])}`,
  );
const batch = positive('batch', values.batch);
const threads = Number(values.threads);
const repeat = positive('repeat', values.repeat);
const only = new Set((values.only ?? '').split(',').map((s) => s.trim()));
const ffmpeg = resolveFfmpeg();
const sessions = new SessionCache({ thread: false, ...(threads > 0 ? { threads } : {}) });
const mapping = parseLipsyncModelMapping('wav2lip-test');

function positive(name: string, text: string | undefined): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`Expected --${name} to be a positive integer but received ${JSON.stringify(text)}`);
  return n;
}

const ms = (x: number): string => x.toFixed(1);
const perFrame = (total: number, frames: number): string => (total / frames).toFixed(2);

// ------------------------------------------------------------------ input

/** The photo scaled so the face fills a third of the frame height, drifting a few pixels a frame. */
async function makeClip(file: string, speech: string): Promise<void> {
  const scale = height / 300;
  const photo = await sharp(DEFAULT_SAMPLE_IMAGE)
    .removeAlpha()
    .resize(Math.round(512 * scale))
    .extend({
      left: width,
      right: width,
      top: height,
      bottom: height,
      background: '#7f7f80',
    })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const base = sharp(photo.data, { raw: { width: photo.info.width, height: photo.info.height, channels: 3 } });
  const frames = Math.round(seconds * fps);
  const encoder = spawnProcess(
    ffmpeg,
    [
      '-hide_banner',
      '-v',
      'error',
      '-y',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      '-s',
      `${width}x${height}`,
      '-r',
      String(fps),
      '-i',
      'pipe:0',
      '-i',
      speech,
      '-t',
      String(seconds),
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-crf',
      '20',
      '-pix_fmt',
      'yuv420p',
      '-c:a',
      'aac',
      file,
    ],
    { stdin: 'pipe', stdout: 'ignore' },
  );
  const stop = new AbortController();
  // The face (around x 150..300, y 40..260 of the photo) left of centre, as in a talking-head shot.
  const left0 = Math.round(width + 100 * scale - width * 0.35);
  const top0 = Math.round(height + 10 * scale);
  for (let f = 0; f < frames; f += 1) {
    const dx = Math.round(12 * Math.sin((2 * Math.PI * f) / (fps * 2)));
    const dy = Math.round(6 * Math.cos((2 * Math.PI * f) / (fps * 3)));
    const frame = await base
      .clone()
      .extract({ left: left0 + dx, top: top0 + dy, width, height })
      .raw()
      .toBuffer();
    await writeWithBackpressure(encoder.stdin!, frame, stop.signal);
  }
  await endPipe(encoder.stdin!, stop.signal);
  await encoder.done;
}

async function makeSpeech(dir: string): Promise<string> {
  const file = path.join(dir, 'speech.wav');
  const espeak = findOnPath('espeak-ng');
  if (espeak !== undefined) {
    const text =
      'The quick brown fox jumps over the lazy dog. Every frame of this clip is lip synced while the pipeline is timed, stage by stage.';
    await runProcess(espeak, ['-s', '150', '-w', file, text]);
    return file;
  }
  const fixture = path.resolve('test/kinds/lipsync/pipeline/fixtures/speech-16k.wav');
  await runProcess(ffmpeg, ['-v', 'error', '-y', '-stream_loop', '-1', '-i', fixture, '-t', String(seconds + 1), file]);
  return file;
}

// ------------------------------------------------------------------ stand-in networks

interface Recorded {
  mel: Float32Array;
  faces: Float32Array;
  count: number;
}

/** The network, its batches recorded (copies) and its time measured. */
function recording(model: LipsyncModel, batches: Recorded[]): LipsyncModel {
  return {
    name: model.name,
    manifest: model.manifest,
    testModel: model.testModel,
    batch: model.batch,
    run: (mel, faces, count) => {
      batches.push({ mel: mel.slice(), faces: faces.slice(), count });
      return model.run(mel, faces, count);
    },
  };
}

/** The network plus `perFace` ms per face, spent blocking the thread or waiting asynchronously. */
function withCost(model: LipsyncModel, perFace: number, blocking: boolean): LipsyncModel {
  return {
    name: model.name,
    manifest: model.manifest,
    testModel: model.testModel,
    batch: model.batch,
    run: async (mel, faces, count) => {
      const out = await model.run(mel, faces, count);
      const cost = perFace * count;
      if (blocking) {
        const until = performance.now() + cost;
        while (performance.now() < until) {
          // Busy: an ONNX Runtime call on this thread holds the event loop exactly like this.
        }
      } else {
        await new Promise((resolve) => setTimeout(resolve, cost));
      }
      return out;
    },
  };
}

async function modelOnly(model: LipsyncModel, batches: readonly Recorded[]): Promise<number> {
  const started = performance.now();
  for (const b of batches) await model.run(b.mel, b.faces, b.count);
  return performance.now() - started;
}

// ------------------------------------------------------------------ stages alone

async function spec(file: string, info: MediaInfo): Promise<SourceDecodeSpec> {
  const video = info.video!;
  const size = displayedSize(video);
  const extras = await probeVideoExtras(file, info.container);
  return {
    inputPath: file,
    container: info.container,
    timing: frameTiming(video),
    matrix: inputMatrix(extras, size),
    size,
  };
}

async function readAll(s: SourceDecodeSpec): Promise<{ ms: number; frames: Buffer[] }> {
  const started = performance.now();
  const stream = ffmpegFrameStream(ffmpeg, sourceDecoderArgs(s), s.size.width * s.size.height * 3);
  const frames: Buffer[] = [];
  for (;;) {
    const f = await stream.next();
    if (f === null) break;
    frames.push(f);
  }
  await stream.close();
  return { ms: performance.now() - started, frames };
}

async function encodeOnly(
  s: SourceDecodeSpec,
  frames: readonly Buffer[],
  audio: { path: string; info: MediaInfo },
  out: string,
): Promise<number> {
  const started = performance.now();
  const args = lipsyncEncoderArgs({
    size: s.size,
    rate: s.timing.rate,
    quality: { mode: 'crf', encoder: DEFAULT_ENCODER },
    audio: { path: audio.path, container: audio.info.container },
    durationSeconds: frames.length / fps,
    outputPath: out,
  });
  const proc = spawnProcess(ffmpeg, args, { stdin: 'pipe', stdout: 'ignore' });
  const stop = new AbortController();
  for (const f of frames) await writeWithBackpressure(proc.stdin!, f, stop.signal);
  await endPipe(proc.stdin!, stop.signal);
  await proc.done;
  return performance.now() - started;
}

function report(label: string, outcome: LipsyncOutcome, modelAlone: number): void {
  const { stats, frames } = outcome;
  const nonModel = stats.wallMs - modelAlone;
  console.log(`\n${label}`);
  console.log(`  wall ${ms(stats.wallMs)} ms for ${frames} frames (${ms(frames / (stats.wallMs / 1000))} fps)`);
  console.log(
    `  setup ${ms(stats.setupMs)} | face pass ${ms(stats.detectMs)} (${perFrame(stats.detectMs, frames)}/frame) | output pass ${ms(stats.outputMs)} (${perFrame(stats.outputMs, frames)}/frame)`,
  );
  console.log(
    `  inside the output pass: network calls ${ms(stats.modelMs)} in ${stats.modelCalls} calls, crop+input ${perFrame(stats.prepareMs, frames)}/frame, paste ${perFrame(stats.pasteMs, frames)}/frame`,
  );
  console.log(
    `  model-only ${ms(modelAlone)} ms -> wall / model-only ${(stats.wallMs / modelAlone).toFixed(2)}, share of wall left to the model ${((100 * modelAlone) / stats.wallMs).toFixed(0)} %`,
  );
  console.log(
    `  non-model cost left in the wall time: ${perFrame(nonModel, frames)} ms/frame (wall - model-only), ` +
      `of which the output pass ${perFrame(stats.outputMs - modelAlone, frames)} ms/frame (output pass - model-only)`,
  );
}

// ------------------------------------------------------------------ main

const target = await docsTarget('lipsync', values);
const machine = describeMachine(machineInfo());
const tables: DocTable[] = [];
const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-lipsync-'));
try {
  console.log(`lip-sync benchmark: ${width}x${height} at ${fps} fps, ${seconds} s; ${machine}`);
  const speech = await makeSpeech(dir);
  const clip = path.join(dir, 'clip.mp4');
  await makeClip(clip, speech);
  const info = await probeMedia(clip);
  const audioInfo = await probeMedia(speech);
  // The pipeline's default: the network on its worker thread; B uses the calling-thread session.
  const base = await loadThreadedLipsyncModel('vendor-lipsync-2', { sessions, mapping, batch });
  const inline = await loadLipsyncModel('vendor-lipsync-2', { sessions, mapping, batch });
  const request = (output: string) => ({
    videoPath: clip,
    videoInfo: info,
    audioPath: speech,
    audioInfo,
    outputPath: path.join(dir, output),
    model: 'vendor-lipsync-2' as const,
    syncMode: 'cut_off' as const,
    activeSpeaker: false,
    batch,
  });
  // Warm-up: sessions, model files, ffmpeg's caches.
  await lipsyncFile(request('warm.mp4'), { sessions, lipsyncModelMapping: mapping });

  const batches: Recorded[] = [];
  let outcomeA: LipsyncOutcome | undefined;
  let alone = 0;
  if (only.has('A') || only.has('B') || only.has('C')) {
    outcomeA = await lipsyncFile(request('a.mp4'), { sessions, loadModel: async () => recording(base, batches) });
    alone = await modelOnly(base, batches);
    if (only.has('A')) report('A  pipeline with the test network', outcomeA, alone);
  }

  if (only.has('S')) {
    const s = await spec(clip, info);
    const full = await readAll(s);
    const small = await readAll({ ...s, size: detectionSize(s.size) });
    const frames = full.frames.length;
    const detector = await loadBlazeFace(FACE_DETECTION_PROFILES.standard.model, {
      sessions,
      minScore: FACE_DETECTION_PROFILES.standard.minScore,
    });
    const ds = detectionSize(s.size);
    const smallFrames: RgbFrame[] = small.frames.map((f) => ({
      data: new Uint8Array(f.buffer, f.byteOffset, f.byteLength),
      width: ds.width,
      height: ds.height,
    }));
    let detectMs = 0;
    let patchMs = 0;
    let thumbMs = 0;
    for (const frame of smallFrames) {
      let t = performance.now();
      const faces = await detector.detect(frame);
      detectMs += performance.now() - t;
      t = performance.now();
      for (const face of faces) captureFacePatch(frame, face);
      patchMs += performance.now() - t;
      t = performance.now();
      frameThumbnail(frame);
      thumbMs += performance.now() - t;
    }
    const pass = await runFacePass({ ffmpeg, spec: s, detector });
    // Audio features: the job's audio decoded to 16 kHz mono, its mel spectrogram, a window per frame.
    let t = performance.now();
    const samples = await decodeAudio({ path: speech, container: audioInfo.container }, { ffmpegPath: ffmpeg });
    const audioMs = performance.now() - t;
    t = performance.now();
    const mel = melSpectrogram(samples);
    const melMs = performance.now() - t;
    t = performance.now();
    const window = new Float32Array(80 * 16);
    for (let i = 0; i < frames; i += 1) melChunk(mel, i, { num: fps, den: 1 }, window);
    const chunkMs = performance.now() - t;
    const encodeMs = await encodeOnly(
      s,
      full.frames,
      { path: speech, info: audioInfo },
      path.join(dir, 'encode-only.mp4'),
    );
    console.log(`\nS  stages alone, per frame (${frames} frames)`);
    console.log(`  decode ${width}x${height} to rgb24 and read it: ${perFrame(full.ms, frames)} ms`);
    console.log(`  decode at detection size ${ds.width}x${ds.height}: ${perFrame(small.ms, frames)} ms`);
    console.log(
      `  BlazeFace (letterbox + network + decoding): ${perFrame(detectMs, frames)} ms; active-speaker patches ${perFrame(patchMs, frames)} ms; cut thumbnail ${perFrame(thumbMs, frames)} ms`,
    );
    console.log(`  face pass as run (all of the above, overlapped with ffmpeg): ${perFrame(pass.ms, frames)} ms`);
    console.log(
      `  audio features: decode to 16 kHz ${perFrame(audioMs, frames)} ms, mel spectrogram ${perFrame(melMs, frames)} ms, window per frame ${perFrame(chunkMs, frames)} ms`,
    );
    console.log(
      `  encode ${width}x${height} H.264 (${DEFAULT_ENCODER.preset}, crf ${DEFAULT_ENCODER.crf}) + AAC from the pipe: ${perFrame(encodeMs, frames)} ms`,
    );
    if (outcomeA !== undefined) {
      console.log(
        `  crop + network input ${perFrame(outcomeA.stats.prepareMs, frames)} ms, output to RGB + paste ${perFrame(outcomeA.stats.pasteMs, frames)} ms (from run A)`,
      );
    }
    const stages = [
      [`decode ${width}x${height} to RGB`, perFrame(full.ms, frames)],
      [`decode at detection size (${ds.width}x${ds.height})`, perFrame(small.ms, frames)],
      ['BlazeFace', perFrame(detectMs, frames)],
      ['active-speaker patches', perFrame(patchMs, frames)],
      ['shot-cut thumbnail', perFrame(thumbMs, frames)],
      ['face pass as run (decode beside detection)', perFrame(pass.ms, frames)],
      ['audio features: decode to 16 kHz mono', perFrame(audioMs, frames)],
      ['audio features: mel spectrogram', perFrame(melMs, frames)],
      ['audio features: the window for each frame', perFrame(chunkMs, frames)],
      [`x264 encode (${DEFAULT_ENCODER.preset}, crf ${DEFAULT_ENCODER.crf}) + AAC`, perFrame(encodeMs, frames)],
      ...(outcomeA === undefined
        ? []
        : [
            ['crop + network input (run A)', perFrame(outcomeA.stats.prepareMs, frames)],
            ['output to RGB + paste (run A)', perFrame(outcomeA.stats.pasteMs, frames)],
          ]),
    ];
    tables.push({ caption: `Stages alone, ${frames} frames:`, header: TABLES.lipsyncStages.header, rows: stages });
  }

  // Each stand-in twice, alternating: detection first (as before face-schedule.ts), then beside the
  // output pass (the default); the fastest of --repeat runs of each.
  const rows: { key: string; overlapped: boolean; outcome: LipsyncOutcome; alone: number }[] = [];
  for (const [key, blocking] of [
    ['B', true],
    ['C', false],
  ] as const) {
    if (!only.has(key) || outcomeA === undefined) continue;
    const faces = batches.reduce((n, b) => n + b.count, 0);
    const standIn = withCost(blocking ? inline : base, modelMs, blocking);
    const aloneWithCost = alone + modelMs * faces;
    const best = new Map<boolean, LipsyncOutcome>();
    for (let r = 0; r < repeat; r += 1) {
      for (const overlapped of [false, true]) {
        const outcome = await lipsyncFile(request(`${key}-${overlapped}.mp4`), {
          sessions,
          loadModel: async () => standIn,
          overlapFacePass: overlapped,
        });
        const previous = best.get(overlapped);
        if (previous === undefined || outcome.stats.wallMs < previous.stats.wallMs) best.set(overlapped, outcome);
      }
    }
    for (const overlapped of [false, true]) {
      const outcome = best.get(overlapped) as LipsyncOutcome;
      if (overlapped !== outcome.stats.facePassOverlapped)
        throw new Error(
          `Expected the face pass ${overlapped ? 'beside' : 'before'} the output pass but it ran the other way`,
        );
      rows.push({ key, overlapped, outcome, alone: aloneWithCost });
      report(
        `${key}${overlapped ? '' : '0'}  test network + ${modelMs} ms per face ${blocking ? 'on the calling thread, blocking it (modelThread: false)' : 'on its worker thread (the default), the stand-in cost as a wait'}; ` +
          `face pass ${overlapped ? 'beside the output pass (default)' : 'first (overlapFacePass: false)'}`,
        outcome,
        aloneWithCost,
      );
    }
  }
  const runs: string[][] = [];
  if (outcomeA !== undefined && only.has('A')) {
    const w = outcomeA.stats.wallMs;
    runs.push([
      'A: test network',
      'beside the output pass',
      (w / alone).toFixed(2),
      ((100 * alone) / w).toFixed(0),
      perFrame(w - alone, outcomeA.frames),
    ]);
  }
  for (const { key, overlapped, outcome, alone: a } of rows) {
    const w = outcome.stats.wallMs;
    runs.push([
      `${key}: stand-in ${modelMs} ms/face${key === 'C' ? ', worker thread' : ', main thread'}`,
      overlapped ? 'beside the output pass' : 'first',
      (w / a).toFixed(2),
      ((100 * a) / w).toFixed(0),
      perFrame(w - a, outcome.frames),
    ]);
  }
  if (runs.length > 0) {
    tables.push({
      caption: `Wall time over the network's time alone, ${seconds} s clip (B and C: fastest of ${repeat}):`,
      header: TABLES.lipsyncRuns.header,
      rows: runs,
    });
  }
  console.log(`\n${tables.map((t) => markdownTable(t.header, t.rows)).join('\n\n')}`);
  await writeDocsBlock(target, 'lipsync', tables, machine);
  await cli.done({ tables });
} finally {
  await releaseLipsyncThreads();
  await sessions.release();
  await rm(dir, { recursive: true, force: true });
}
