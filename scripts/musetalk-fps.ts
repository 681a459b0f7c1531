/**
 * Frames per second of the lip-sync network stage, MuseTalk against Wav2Lip, on the same frames,
 * host, threads and execution providers: everything from a frame with its detected face to the
 * frame with the new mouth blended in (crop, tensors, the graphs, decode, blend), not decoding,
 * face detection or encoding (the pipeline's, shared by both). figures: docs/lipsync-musetalk.md.
 *
 *   npm run build && node dist/scripts/musetalk-fps.js [--frames 50] [--batch 8] [--threads 2]
 *       [--providers cpu] [--musetalk musetalk-test] [--wav2lip wav2lip-test] [--models-dir DIR]
 *
 * The frames: the astronaut photo (test/fixtures/photos) at 256 x 256, its face found by BlazeFace
 * once. The audio: the committed speech clip, looped to the frames' length. One untimed batch
 * first (session warm-up), then the median of --repeat timed runs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { defaultModelsDir, parseExecutionProviders, SessionCache } from '../src/inference/index.js';
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
} from '../src/lipsync/index.js';
import { PACKAGE_ROOT } from '../src/paths.js';

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
async function wav2lipStage(model: LipsyncModel, frames: RgbFrame[], face: FaceBox, audio: Float32Array): Promise<void> {
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
    chunk.forEach((frame, k) => compositeFace(frame, { data: tensorToRgb(out, size, undefined, k * 3 * size * size), size }, crop, DEFAULT_MOUTH_MASK));
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      frames: { type: 'string', default: '50' },
      batch: { type: 'string', default: '8' },
      threads: { type: 'string', default: '2' },
      providers: { type: 'string', default: 'cpu' },
      repeat: { type: 'string', default: '3' },
      musetalk: { type: 'string', default: 'musetalk-test' },
      wav2lip: { type: 'string', default: 'wav2lip-test' },
      'models-dir': { type: 'string' },
    },
  });
  const count = Number(values.frames);
  const batch = Number(values.batch);
  const repeat = Number(values.repeat);
  const modelsDir = values['models-dir'] ?? defaultModelsDir();
  const providers = parseExecutionProviders(values.providers);
  const sessions = new SessionCache({ thread: false, threads: Number(values.threads), executionProviders: providers });
  try {
    const photo = await sharp(path.join(PACKAGE_ROOT, 'test/fixtures/photos/astronaut.png')).removeAlpha().resize(SIDE, SIDE).raw().toBuffer();
    const base: RgbFrame = { data: new Uint8Array(photo), width: SIDE, height: SIDE };
    const detector = await loadBlazeFace('blazeface-back-256', { sessions, minScore: 0.5 });
    const face = (await detector.detect(base))[0];
    if (face === undefined) throw new Error('Expected BlazeFace to find the astronaut\'s face');
    const speech = readWav16(path.join(PACKAGE_ROOT, 'test/lipsync/fixtures/speech-16k.wav'));
    const audio = new Float32Array(Math.ceil((count / 25) * 16_000) + 16_000);
    for (let i = 0; i < audio.length; i++) audio[i] = speech[i % speech.length]!;
    const frames = (): RgbFrame[] => Array.from({ length: count }, () => ({ ...base, data: base.data.slice() }));

    const musetalk = await loadMuseTalk(values.musetalk, { sessions, modelsDir, batch });
    const museAudio = await musetalk.audio(audio);
    const mapping = Object.fromEntries(Object.keys(DEFAULT_LIPSYNC_MODEL_MAPPING).map((id) => [id, values.wav2lip])) as LipsyncModelMapping;
    const wav2lip = await loadLipsyncModel('vendor-lipsync-2', { sessions, mapping, batch, registry: { modelsDir } });

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
    const museSeconds = await time((f) => musetalk.render(f.map((frame, i) => ({ frame, face, audioFrame: i })), museAudio, FPS));
    const wavSeconds = await time((f) => wav2lipStage(wav2lip, f, face, audio));
    const row = (name: string, s: number): string => `| ${name} | ${count} | ${batch} | ${s.toFixed(2)} | ${(count / s).toFixed(1)} |`;
    console.log(`# providers ${providers.join(',')}, ${values.threads} threads, median of ${repeat}`);
    console.log('| network | frames | batch | seconds | frames/s |');
    console.log('|---|---|---|---|---|');
    console.log(row(values.musetalk, museSeconds));
    console.log(row(values.wav2lip, wavSeconds));
  } finally {
    await sessions.release();
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  });
}
