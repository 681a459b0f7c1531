/**
 * What the output pass asks of a lip-sync network, whichever it is: cut a face out of a frame and
 * make its inputs for one output frame, run a batch of them, paste each result back. The output
 * pass (output-pass.ts) holds the order of things, the batching, the mouth super-resolution and
 * stopping; a FaceGenerator holds the network's own geometry and tensors. Wav2Lip's is here;
 * MuseTalk's is musetalk/generator.ts.
 */
import { melChunk, type MelSpectrogram } from '../audio/index.js';
import { tensorToRgb, wav2lipInput, type LipsyncModel, type TensorLayout } from '../network/index.js';
import type { Rational } from '../timeline.js';
import type { DeepRgbFrame, FaceBox } from '../types.js';
import { compositeFace, type GeneratedFace } from './composite.js';
import { cropFace, cropForFace, type FaceCrop } from './crop.js';
import { DEFAULT_MOUTH_MASK } from './mask.js';

/** One face made ready for the network. */
export interface PreparedFace {
  /** The longer side of the region it is pasted into, in frame pixels: the mouth pass upscales faces larger than the network's. */
  readonly screenSize: number;
}

export interface FaceGenerator<F extends PreparedFace = PreparedFace> {
  /** The manifest that runs, and whether it is a generated test network. */
  readonly name: string;
  readonly testModel: boolean;
  /** Faces per network call. */
  readonly batch: number;
  /** Side of the square faces the network returns. */
  readonly faceSize: number;
  /** The fraction of the generated face's rows above the mouth (the mouth pass upscales from there down). */
  readonly mouthTop: number;
  /**
   * The face in `frame` (the output pass's private copy) made ready for output frame
   * `outputFrame`; undefined when it cannot be used, and the frame passes through as it is.
   */
  prepare(frame: DeepRgbFrame, box: FaceBox, outputFrame: number): F | undefined;
  /** One network call: a generated face per prepared face, faceSize x faceSize interleaved 8-bit RGB. */
  generate(faces: readonly F[], signal?: AbortSignal): Promise<Uint8Array[]>;
  /** Pastes a generated face (upscaled by the mouth pass, maybe: `face.size`) into its frame, in place. */
  paste(frame: DeepRgbFrame, prepared: F, face: GeneratedFace): void;
}

interface Wav2LipFace extends PreparedFace {
  crop: FaceCrop;
  /** The masked and reference crops, the network's layout. */
  faces: Float32Array;
  mel: Float32Array;
}

export interface Wav2LipGeneratorInput {
  model: LipsyncModel;
  /** Mel features of the audio fitted to the timeline's duration. */
  mel: MelSpectrogram;
  /** The timeline's rate: output frame i reads the mel window at i / fps. */
  fps: Rational;
  /** Turn each crop upright along the eye line (the profile's `align`). */
  align: boolean;
}

/** Wav2Lip (and any network of its contract): 96 x 96 crops, masked and reference, and 0.2 s mel windows. */
export function wav2lipGenerator(o: Wav2LipGeneratorInput): FaceGenerator<Wav2LipFace> {
  const { model, align } = o;
  const { manifest } = model;
  const faceSize = manifest.face.size;
  const plane = faceSize * faceSize;
  const melSize = manifest.inputs.mel.shape[2] * manifest.inputs.mel.shape[3];
  const faceValues = 6 * plane;
  const inputLayout: TensorLayout = {
    channelOrder: manifest.inputs.faces.channels,
    range: manifest.inputs.faces.range,
    maskFromRow: manifest.face.maskFromRow,
  };
  const outputLayout: TensorLayout = { channelOrder: manifest.output.channels, range: manifest.output.range };
  return {
    name: model.name,
    testModel: model.testModel,
    batch: Math.max(1, model.batch),
    faceSize,
    mouthTop: DEFAULT_MOUTH_MASK.top,
    prepare(frame, box, outputFrame) {
      const crop = cropForFace(box, { align });
      const face = cropFace(frame, crop, faceSize);
      // The reference is the same crop (docs/lipsync.md, "The output pass").
      const faces = wav2lipInput(face, face, faceSize, inputLayout, new Float32Array(faceValues));
      const mel = melChunk(o.mel, outputFrame, o.fps, new Float32Array(melSize), 0, manifest.audio);
      return { crop, faces, mel, screenSize: Math.max(crop.width, crop.height) };
    },
    async generate(items) {
      const count = items.length;
      const mel = new Float32Array(count * melSize);
      const faces = new Float32Array(count * faceValues);
      items.forEach((item, k) => {
        mel.set(item.mel, k * melSize);
        faces.set(item.faces, k * faceValues);
      });
      const out = await model.run(mel, faces, count);
      return items.map((_, k) => tensorToRgb(out, faceSize, outputLayout, k * 3 * plane));
    },
    paste(frame, item, face) {
      compositeFace(frame, face, item.crop, DEFAULT_MOUTH_MASK);
    },
  };
}
