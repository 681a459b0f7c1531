/**
 * Frames per second of the lip-sync network stage, MuseTalk against Wav2Lip, on the same frames,
 * host, threads and execution providers: everything from a frame with its detected face to the
 * frame with the new mouth blended in (crop, tensors, the graphs, decode, blend), not decoding,
 * face detection or encoding (the pipeline's, shared by both). Figures: docs/lipsync-musetalk.md.
 *
 *   media-worker bench musetalk [--frames 50] [--batch 8] [--threads 2] [--providers cpu]
 *       [--musetalk musetalk-test] [--musetalk-dir DIR] [--wav2lip wav2lip-test] [--models-dir DIR]
 *       [--strict-providers] [--jobs]
 *
 * --musetalk-dir: a models folder for the MuseTalk network alone (a sized build of
 * scripts/make-test-musetalk-model.ts, such as the real-size graphs the device check makes), so
 * that Wav2Lip and BlazeFace still come from --models-dir. Each network's row names the provider
 * its sessions opened on; --strict-providers fails instead when that is not the first one asked
 * for (a GPU provider that could not start would otherwise be timed on the CPU).
 *
 * --jobs: then whole jobs through the pipeline on the bundled face video (musetalk-jobs.ts), both
 * networks from --models-dir.
 *
 * The frames: the astronaut photo (test/fixtures/photos) at 256 x 256, its face found by BlazeFace
 * once. The audio: the committed speech clip, looped to the frames' length. One untimed batch
 * first (session warm-up), then the median of --repeat timed runs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import {
  defaultModelsDir,
  ensureModelFile,
  parseExecutionProviders,
  SessionCache,
  type ExecutionProviderName,
} from '../../src/inference/index.js';
import {
  compositeFace,
  cropFace,
  cropForFace,
  DEFAULT_LIPSYNC_MODEL_MAPPING,
  DEFAULT_MOUTH_MASK,
  loadBlazeFace,
  loadLipsyncModel,
  loadMuseTalk,
  melChunk,
  melSpectrogram,
  tensorToRgb,
  wav2lipInput,
  type FaceBox,
  type LipsyncModel,
  type LipsyncModelMapping,
  type RgbFrame,
} from '../../src/kinds/lipsync/pipeline/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { benchCli } from '../harness.js';
import { FACE_VIDEO, timeWholeJobs } from './musetalk-jobs.js';

const SIDE = 256;
const FPS = { num: 25, den: 1 };

function readWav16(file: string): Float32Array {
  const bytes = readFileSync(file);
  const at = bytes.indexOf('data') + 8;
  const out = new Float32Array(bytes.readUInt32LE(at - 4) / 2);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readInt16LE(at + 2 * i) / 32768;
  return out;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Wav2Lip's stage as the output pass runs it: crop, tensor, network, back to RGB, composite. */
async function wav2lipStage(
  model: LipsyncModel,
  frames: RgbFrame[],
  face: FaceBox,
  audio: Float32Array,
): Promise<void> {
  const mel = melSpectrogram(audio);
  const size = model.manifest.face.size;
  const crop = cropForFace(face);
  for (let start = 0; start < frames.length; start += model.batch) {
    const chunk = frames.slice(start, start + model.batch);
    const n = chunk.length;
    const faces = new Float32Array(n * 6 * size * size);
    const mels = new Float32Array(n * 80 * 16);
    chunk.forEach((frame, k) => {
      const image = cropFace(frame, crop, size);
      wav2lipInput(image, image, size, undefined, faces, k * 6 * size * size);
      melChunk(mel, start + k, FPS, mels, k * 80 * 16, model.manifest.audio);
    });
    const out = await model.run(mels, faces, n);
    chunk.forEach((frame, k) =>
      compositeFace(
        frame,
        { data: tensorToRgb(out, size, undefined, k * 3 * size * size), size },
        crop,
        DEFAULT_MOUTH_MASK,
      ),
    );
  }
}

const cli = benchCli({
  name: 'musetalk',
  options: {
    frames: { type: 'string', arg: 'N', help: 'frames per timed run', default: '50' },
    batch: { type: 'string', arg: 'N', help: 'frames per network call, both networks', default: '8' },
    musetalk: {
      type: 'string',
      arg: 'NAME',
      help: 'the MuseTalk network (models/musetalk/NAME.json)',
      default: 'musetalk-test',
    },
    wav2lip: { type: 'string', arg: 'NAME', help: 'the Wav2Lip manifest', default: 'wav2lip-test' },
    'models-dir': { type: 'string', arg: 'DIR', help: "where the manifests are (default: the package's models/)" },
    'musetalk-dir': {
      type: 'string',
      arg: 'DIR',
      help: 'a models folder for the MuseTalk network alone: DIR/musetalk/NAME.json and its graphs (default: --models-dir)',
    },
    jobs: {
      type: 'boolean',
      help: 'then time whole lip-sync jobs (lipsyncFile) on the bundled face video, both networks from --models-dir',
    },
    'strict-providers': {
      type: 'boolean',
      help: 'fail when a network did not open on the first provider asked for, instead of timing it where it fell back',
    },
  },
  common: {
    providers: { default: 'cpu' },
    threads: { default: '2' },
    repeat: { default: '3' },
  },
});

async function main(): Promise<void> {
  const values = cli.values;
  const count = Number(values.frames);
  const batch = Number(values.batch);
  const repeat = Number(values.repeat);
  const modelsDir = values['models-dir'] ?? defaultModelsDir();
  const providers = parseExecutionProviders(values.providers);
  const sessions = new SessionCache({ thread: false, threads: Number(values.threads), executionProviders: providers });
  try {
    const photo = await sharp(path.join(PACKAGE_ROOT, 'test/fixtures/photos/astronaut.png'))
      .removeAlpha()
      .resize(SIDE, SIDE)
      .raw()
      .toBuffer();
    const base: RgbFrame = { data: new Uint8Array(photo), width: SIDE, height: SIDE };
    const detector = await loadBlazeFace('blazeface-back-256', { sessions, minScore: 0.5 });
    const face = (await detector.detect(base))[0];
    if (face === undefined) throw new Error("Expected BlazeFace to find the astronaut's face");
    const speech = readWav16(path.join(PACKAGE_ROOT, 'test/kinds/lipsync/pipeline/fixtures/speech-16k.wav'));
    const audio = new Float32Array(Math.ceil((count / 25) * 16_000) + 16_000);
    for (let i = 0; i < audio.length; i++) audio[i] = speech[i % speech.length]!;
    const frames = (): RgbFrame[] => Array.from({ length: count }, () => ({ ...base, data: base.data.slice() }));

    const museDir = values['musetalk-dir'] ?? modelsDir;
    const wanted = providers[0] ?? 'cpu';
    // Where the sessions opened: a provider that cannot start falls back quietly, and a GPU figure
    // taken on the CPU must say so. MuseTalk's engine reports its threads' providers (asking the
    // cache would open its graphs a second time); Wav2Lip's session is the cache's own.
    const openedOn = (network: string, providersOpened: readonly ExecutionProviderName[]): string => {
      const got = [...new Set(providersOpened)].join('+');
      if (values['strict-providers'] && got !== wanted)
        throw new Error(
          `Expected ${network} to open on ${wanted} but its sessions opened on ${got} (--strict-providers)`,
        );
      return got;
    };
    let started = performance.now();
    const musetalk = await loadMuseTalk(values.musetalk, { sessions, modelsDir: museDir, batch });
    const museOpenSeconds = (performance.now() - started) / 1000;
    const provider = {
      musetalk: openedOn(values.musetalk, Object.values(musetalk.providers)),
      wav2lip: '',
    };
    const museAudio = await musetalk.audio(audio);
    const mapping = Object.fromEntries(
      Object.keys(DEFAULT_LIPSYNC_MODEL_MAPPING).map((id) => [id, values.wav2lip]),
    ) as LipsyncModelMapping;
    started = performance.now();
    const wav2lip = await loadLipsyncModel('vendor-lipsync-2', { sessions, mapping, batch, registry: { modelsDir } });
    const wavOpenSeconds = (performance.now() - started) / 1000;
    provider.wav2lip = openedOn(values.wav2lip, [
      (await sessions.get((await ensureModelFile(values.wav2lip, { modelsDir })).path)).provider,
    ]);

    const time = async (run: (f: RgbFrame[]) => Promise<unknown>): Promise<number> => {
      await run(frames().slice(0, batch));
      const seconds: number[] = [];
      for (let r = 0; r < repeat; r++) {
        const input = frames();
        const t0 = performance.now();
        await run(input);
        seconds.push((performance.now() - t0) / 1000);
      }
      return median(seconds);
    };
    const museSeconds = await time((f) =>
      musetalk.render(
        f.map((frame, i) => ({ frame, face, audioFrame: i })),
        museAudio,
        FPS,
      ),
    );
    const wavSeconds = await time((f) => wav2lipStage(wav2lip, f, face, audio));
    const header = ['network', 'provider', 'frames', 'batch', 'seconds', 'frames/s'];
    const rows = [values.musetalk, values.wav2lip].map((name, i) => {
      const s = i === 0 ? museSeconds : wavSeconds;
      return [
        name,
        i === 0 ? provider.musetalk : provider.wav2lip,
        String(count),
        String(batch),
        s.toFixed(2),
        (count / s).toFixed(1),
      ];
    });
    const caption = `network stage, providers ${providers.join(',')}, ${values.threads} threads, median of ${repeat}`;
    const tables = [{ caption, header, rows }];
    const jobs = values.jobs
      ? await timeWholeJobs({ manifests: [values.musetalk, values.wav2lip], sessions, modelsDir, batch, repeat })
      : [];
    if (jobs.length > 0)
      tables.push({
        caption: `whole jobs on ${path.basename(FACE_VIDEO)} (vendor-lipsync-2, cut_off), fastest of ${repeat}`,
        header: ['network', 'frames', 'driven', 'seconds', 'frames/s'],
        rows: jobs.map((j) => [
          j.network,
          String(j.frames),
          String(j.drivenFrames),
          j.seconds.toFixed(2),
          j.framesPerSecond.toFixed(1),
        ]),
      });
    for (const t of tables) {
      console.log(`# ${t.caption}`);
      console.log(`| ${t.header.join(' | ')} |`);
      console.log(`|${t.header.map(() => '---').join('|')}|`);
      for (const r of t.rows) console.log(`| ${r.join(' | ')} |`);
    }
    const figures = (name: string, seconds: number, openSeconds: number, on: string): object => ({
      name,
      provider: on,
      seconds,
      framesPerSecond: count / seconds,
      openSeconds,
    });
    await cli.done({
      tables,
      data: {
        frames: count,
        batch,
        providers,
        musetalk: figures(values.musetalk, museSeconds, museOpenSeconds, provider.musetalk),
        wav2lip: figures(values.wav2lip, wavSeconds, wavOpenSeconds, provider.wav2lip),
        ...(jobs.length > 0 ? { jobs } : {}),
      },
    });
  } finally {
    await sessions.release();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
