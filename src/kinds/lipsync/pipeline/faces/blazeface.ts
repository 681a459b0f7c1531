/**
 * BlazeFace face detection: a frame is letterboxed into the detector's square input (aspect kept,
 * black borders), the network's 896 anchors are decoded per MediaPipe's SSD scheme for BlazeFace
 * (fixed-size anchors centred in their cells; box centre and keypoints are offsets from the anchor
 * in input pixels, width and height absolute), scores go through a sigmoid, overlapping detections
 * are blended MediaPipe-style (score-weighted mean of every detection overlapping the best one),
 * and boxes and keypoints are mapped back to frame pixels.
 *
 * The exported graphs have a fixed batch of one (batch-1 reshapes baked in), so frames go through
 * one call each; at 256x256 a call costs a few milliseconds on a CPU core.
 *
 * Boxes may reach outside the frame (a face cut by the edge): consumers clip.
 */
import sharp from 'sharp';
import ort from 'onnxruntime-node';
import {
  type AnchorLayer,
  type FaceDetectionManifest,
  ensureModelFile,
  getManifest,
  type RegistryOptions,
  type InlineSession,
  type ModelSession,
  type SessionCache,
} from '../../../../inference/index.js';
import type { FaceBox, FaceKeypoints, Point, RgbFrame } from '../types.js';

export const DEFAULT_FACE_DETECTOR = 'blazeface-back-256';

/** Anything that finds faces in one frame. */
export interface FaceDetector {
  readonly name: string;
  detect(frame: RgbFrame): Promise<FaceBox[]>;
}

export interface BlazeFaceOptions {
  /** Drop detections scoring below this (0..1); default: the manifest's. */
  minScore?: number;
  /** Blend detections overlapping more than this; default: the manifest's. */
  iouThreshold?: number;
  /**
   * Black border added around the frame before letterboxing, as a fraction of its longer side.
   * A face cut by the frame edge then sits inside the input with context around it, and a close-up
   * filling the frame shrinks to a size the full-range model knows. 0 by default.
   */
  margin?: number;
}

/** A detection in the detector's input square, as fractions of its edge (0..1, may overflow). */
export interface RawDetection {
  cx: number;
  cy: number;
  w: number;
  h: number;
  /** x, y pairs in the manifest's keypoint order. */
  keypoints: number[];
  score: number;
}

/** How a frame sits inside the detector's square input. */
export interface Letterbox {
  /** Input edge in pixels. */
  size: number;
  /** The frame's size inside the input, in input pixels. */
  innerWidth: number;
  innerHeight: number;
  /** Top-left corner of the frame inside the input, in input pixels. */
  left: number;
  top: number;
  frameWidth: number;
  frameHeight: number;
}

function expectFraction(name: string, value: number, low: number, high: number): void {
  if (!Number.isFinite(value) || value < low || value >= high) {
    throw new RangeError(`Expected ${name} in [${low}, ${high}) but received ${value}`);
  }
}

export function letterboxGeometry(frameWidth: number, frameHeight: number, size: number, margin = 0): Letterbox {
  if (!(Number.isInteger(frameWidth) && frameWidth > 0 && Number.isInteger(frameHeight) && frameHeight > 0)) {
    throw new RangeError(`Expected positive integer frame size but received ${frameWidth}x${frameHeight}`);
  }
  expectFraction('margin', margin, 0, 1);
  const side = Math.max(frameWidth, frameHeight) * (1 + 2 * margin);
  const scale = size / side;
  const innerWidth = Math.max(1, Math.min(size, Math.round(frameWidth * scale)));
  const innerHeight = Math.max(1, Math.min(size, Math.round(frameHeight * scale)));
  return {
    size,
    innerWidth,
    innerHeight,
    left: Math.floor((size - innerWidth) / 2),
    top: Math.floor((size - innerHeight) / 2),
    frameWidth,
    frameHeight,
  };
}

/** The frame letterboxed into an NHWC float tensor with values in `range` (black borders at `range[0]`). */
export async function letterboxTensor(
  frame: RgbFrame,
  box: Letterbox,
  range: readonly [number, number],
): Promise<Float32Array> {
  const expected = frame.width * frame.height * 3;
  if (frame.data.length !== expected) {
    throw new RangeError(
      `Expected ${expected} bytes for a ${frame.width}x${frame.height} RGB frame but received ${frame.data.length}`,
    );
  }
  const pixels = await sharp(frame.data, { raw: { width: frame.width, height: frame.height, channels: 3 } })
    .resize(box.innerWidth, box.innerHeight, { fit: 'fill' })
    .extend({
      top: box.top,
      left: box.left,
      bottom: box.size - box.innerHeight - box.top,
      right: box.size - box.innerWidth - box.left,
      background: { r: 0, g: 0, b: 0 },
    })
    .removeAlpha()
    .raw()
    .toBuffer();
  const [low, high] = range;
  const step = (high - low) / 255;
  const out = new Float32Array(pixels.length);
  for (let i = 0; i < pixels.length; i += 1) out[i] = (pixels[i] as number) * step + low;
  return out;
}

function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

export interface AnchorOutputs {
  /** Raw scores per layer, in the manifest's layer order. */
  scores: readonly Float32Array[];
  /** Regressors per layer. */
  boxes: readonly Float32Array[];
}

export interface AnchorScheme {
  layers: readonly Pick<AnchorLayer, 'cells' | 'anchorsPerCell'>[];
  offset: number;
  valuesPerAnchor: number;
  boxScale: number;
}

/** Every anchor scoring at least `minScore`, decoded into input fractions. */
export function decodeAnchors(scheme: AnchorScheme, outputs: AnchorOutputs, minScore: number): RawDetection[] {
  const found: RawDetection[] = [];
  const keypointValues = scheme.valuesPerAnchor - 4;
  scheme.layers.forEach((layer, l) => {
    const scores = outputs.scores[l];
    const boxes = outputs.boxes[l];
    const count = layer.cells * layer.cells * layer.anchorsPerCell;
    if (
      scores === undefined ||
      boxes === undefined ||
      scores.length !== count ||
      boxes.length !== count * scheme.valuesPerAnchor
    ) {
      throw new RangeError(
        `Expected ${count} scores and ${count * scheme.valuesPerAnchor} regressors for anchor layer ${l} but received ` +
          `${scores?.length ?? 0} and ${boxes?.length ?? 0}`,
      );
    }
    for (let a = 0; a < count; a += 1) {
      const score = sigmoid(scores[a] as number);
      if (score < minScore) continue;
      const cell = Math.floor(a / layer.anchorsPerCell);
      const ax = ((cell % layer.cells) + scheme.offset) / layer.cells;
      const ay = (Math.floor(cell / layer.cells) + scheme.offset) / layer.cells;
      const base = a * scheme.valuesPerAnchor;
      const value = (k: number): number => (boxes[base + k] as number) / scheme.boxScale;
      const keypoints: number[] = [];
      for (let k = 0; k < keypointValues; k += 2) keypoints.push(ax + value(4 + k), ay + value(5 + k));
      found.push({ cx: ax + value(0), cy: ay + value(1), w: value(2), h: value(3), keypoints, score });
    }
  });
  return found;
}

export function iou(a: RawDetection, b: RawDetection): number {
  const x0 = Math.max(a.cx - a.w / 2, b.cx - b.w / 2);
  const y0 = Math.max(a.cy - a.h / 2, b.cy - b.h / 2);
  const x1 = Math.min(a.cx + a.w / 2, b.cx + b.w / 2);
  const y1 = Math.min(a.cy + a.h / 2, b.cy + b.h / 2);
  const inner = Math.max(0, x1 - x0) * Math.max(0, y1 - y0);
  const union = a.w * a.h + b.w * b.h - inner;
  return union > 0 ? inner / union : 0;
}

/**
 * MediaPipe's weighted non-maximum suppression: the best remaining detection and every one
 * overlapping it above `threshold` become one detection whose geometry is their score-weighted
 * mean and whose score is the best one's. Steadier boxes than plain suppression, which matters
 * for video.
 */
export function blendOverlaps(detections: readonly RawDetection[], threshold: number): RawDetection[] {
  const remaining = [...detections].sort((a, b) => b.score - a.score);
  const blended: RawDetection[] = [];
  while (remaining.length > 0) {
    const best = remaining[0] as RawDetection;
    const group: RawDetection[] = [];
    const rest: RawDetection[] = [];
    for (const d of remaining) (iou(best, d) > threshold || d === best ? group : rest).push(d);
    remaining.splice(0, remaining.length, ...rest);
    if (group.length === 1) {
      blended.push(best);
      continue;
    }
    let total = 0;
    const mean = { cx: 0, cy: 0, w: 0, h: 0, keypoints: best.keypoints.map(() => 0) };
    for (const d of group) {
      total += d.score;
      mean.cx += d.cx * d.score;
      mean.cy += d.cy * d.score;
      mean.w += d.w * d.score;
      mean.h += d.h * d.score;
      d.keypoints.forEach((v, k) => (mean.keypoints[k] = (mean.keypoints[k] as number) + v * d.score));
    }
    blended.push({
      cx: mean.cx / total,
      cy: mean.cy / total,
      w: mean.w / total,
      h: mean.h / total,
      keypoints: mean.keypoints.map((v) => v / total),
      score: best.score,
    });
  }
  return blended;
}

/** A detection in input fractions mapped to frame pixels. */
export function toFrameBox(d: RawDetection, box: Letterbox, keypointOrder: readonly (keyof FaceKeypoints)[]): FaceBox {
  const sx = box.frameWidth / box.innerWidth;
  const sy = box.frameHeight / box.innerHeight;
  const px = (fx: number): number => (fx * box.size - box.left) * sx;
  const py = (fy: number): number => (fy * box.size - box.top) * sy;
  const width = d.w * box.size * sx;
  const height = d.h * box.size * sy;
  const points: Partial<Record<keyof FaceKeypoints, Point>> = {};
  keypointOrder.forEach((name, k) => {
    points[name] = [px(d.keypoints[2 * k] ?? Number.NaN), py(d.keypoints[2 * k + 1] ?? Number.NaN)];
  });
  return {
    x: px(d.cx) - width / 2,
    y: py(d.cy) - height / 2,
    width,
    height,
    score: d.score,
    keypoints: points as FaceKeypoints,
  };
}

/**
 * In-plane rotation of a face in degrees, from the line between its eyes: 0 upright, positive when
 * the face is turned clockwise on screen (its right-hand eye, as seen, lower than its left-hand one).
 * Rotating the frame by minus this angle about the face centre makes the face upright.
 */
export function faceRollDegrees(face: FaceBox): number {
  const [lx, ly] = face.keypoints.leftEye;
  const [rx, ry] = face.keypoints.rightEye;
  return (Math.atan2(ry - ly, rx - lx) * 180) / Math.PI;
}

export class BlazeFaceDetector implements FaceDetector {
  readonly name: string;
  readonly manifest: FaceDetectionManifest;
  readonly minScore: number;
  readonly iouThreshold: number;
  readonly margin: number;
  readonly #session: ort.InferenceSession;

  constructor(manifest: FaceDetectionManifest, session: ort.InferenceSession, options: BlazeFaceOptions = {}) {
    this.name = manifest.name;
    this.manifest = manifest;
    this.minScore = options.minScore ?? manifest.defaults.minScore;
    this.iouThreshold = options.iouThreshold ?? manifest.defaults.iouThreshold;
    this.margin = options.margin ?? 0;
    expectFraction('minScore', this.minScore, 0, 1);
    expectFraction('iouThreshold', this.iouThreshold, 0, 1);
    expectFraction('margin', this.margin, 0, 1);
    const missing = [manifest.input.name, ...manifest.anchors.layers.flatMap((l) => [l.scores, l.boxes])].filter(
      (n) => !session.inputNames.includes(n) && !session.outputNames.includes(n),
    );
    if (missing.length > 0) {
      throw new Error(
        `Expected ${manifest.name} to have tensors ${missing.join(', ')} as its manifest says, but the graph lacks them`,
      );
    }
    this.#session = session;
  }

  /** The frame's detections before blending, in input fractions (tests and tuning). */
  async detectRaw(frame: RgbFrame): Promise<{ detections: RawDetection[]; letterbox: Letterbox }> {
    const { input, anchors } = this.manifest;
    const letterbox = letterboxGeometry(frame.width, frame.height, input.size, this.margin);
    const tensor = await letterboxTensor(frame, letterbox, input.range);
    const result = await this.#session.run({
      [input.name]: new ort.Tensor('float32', tensor, [1, input.size, input.size, 3]),
    });
    const pick = (name: string): Float32Array => {
      const data = result[name]?.data;
      if (!(data instanceof Float32Array)) throw new Error(`Expected ${this.name} to return float32 ${name}`);
      return data;
    };
    const outputs = {
      scores: anchors.layers.map((l) => pick(l.scores)),
      boxes: anchors.layers.map((l) => pick(l.boxes)),
    };
    return { detections: decodeAnchors(anchors, outputs, this.minScore), letterbox };
  }

  async detect(frame: RgbFrame): Promise<FaceBox[]> {
    const { detections, letterbox } = await this.detectRaw(frame);
    return blendOverlaps(detections, this.iouThreshold)
      .map((d) => toFrameBox(d, letterbox, this.manifest.keypoints))
      .sort((a, b) => b.score - a.score);
  }
}

/**
 * The ONNX Runtime session behind a cached one, for a network with several inputs or outputs run
 * on the calling thread (a cached worker-thread session's `run` is one-input, one-output): such
 * models load from a cache made with `{ thread: false }`. The lip-sync networks run on threads of
 * their own instead, opened there only with that cache's settings (inference/thread-cache.ts).
 */
export function rawSession(session: ModelSession, name: string): ort.InferenceSession {
  if ('session' in session) return (session as InlineSession).session;
  throw new Error(
    `Expected a session on the calling thread for ${name} (several inputs or outputs) but the cache gave a worker-thread session: ` +
      'load it from a SessionCache created with { thread: false }',
  );
}

export interface LoadFaceDetectorOptions extends BlazeFaceOptions {
  /** Made with `{ thread: false }` (see rawSession). */
  sessions: SessionCache;
  registry?: RegistryOptions;
}

/** Manifest -> verified file (fetched on first use) -> cached session -> detector. */
export async function loadBlazeFace(name: string, options: LoadFaceDetectorOptions): Promise<BlazeFaceDetector> {
  const { sessions, registry = {}, ...detectorOptions } = options;
  const manifest = await getManifest(name, registry);
  if (manifest.task !== 'face-detection') {
    throw new Error(`Expected a face-detection model but ${name} is a ${manifest.task} model`);
  }
  const file = await ensureModelFile(name, registry);
  return new BlazeFaceDetector(manifest, rawSession(await sessions.get(file.path), name), detectorOptions);
}
