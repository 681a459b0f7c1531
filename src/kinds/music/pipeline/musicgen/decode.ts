/**
 * MusicGen's generation loop on ONNX Runtime: text encoder once, then the merged decoder one step
 * at a time with its key/value cache, classifier-free guidance (the batch doubled with an empty
 * text), top-k sampling and the delay pattern, then EnCodec turns the codes into 32 kHz audio.
 * The loop yields to the event loop between steps (heartbeats keep going), reports each step, and
 * stops at the next step when the job's signal aborts.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import ort from 'onnxruntime-node';
import {
  AUDIO_CODES,
  AUDIO_VALUES,
  DECODER_ENCODER_MASK,
  DECODER_ENCODER_STATES,
  DECODER_INPUT_IDS,
  DECODER_LOGITS,
  DECODER_USE_CACHE,
  pastName,
  presentName,
  TEXT_OUTPUT,
} from './contract.js';
import type { MusicgenSpec } from './folder.js';
import { seededRandom } from '../../../../seeded-random.js';
import { guide, isDelayed, sampleTopK, stepsFor, undelay } from './sampling.js';
import { abortReason } from '../../../../errors.js';

export interface MusicgenSessions {
  textEncoder: ort.InferenceSession;
  decoder: ort.InferenceSession;
  audioDecoder: ort.InferenceSession;
}

export interface DecodeOptions {
  /** Token ids of the text, one row per song (all rows the same length). */
  tokens: readonly number[];
  /** Songs in the batch (2). */
  batch: number;
  frames: number;
  seed: number;
  signal?: AbortSignal;
  onStep?: (done: number, total: number) => void;
}

function int64(values: readonly number[] | BigInt64Array, dims: readonly number[]): ort.Tensor {
  const data = values instanceof BigInt64Array ? values : BigInt64Array.from(values, (v) => BigInt(v));
  return new ort.Tensor('int64', data, dims);
}

/** Returns one Float32Array of samples per song. */
export async function decodeMusic(
  sessions: MusicgenSessions,
  spec: MusicgenSpec,
  opts: DecodeOptions,
): Promise<Float32Array[]> {
  const { batch, frames } = opts;
  const K = spec.codebooks;
  const S = opts.tokens.length;
  const ids: number[] = [];
  for (let b = 0; b < batch; b += 1) ids.push(...opts.tokens);
  const text = await sessions.textEncoder.run({
    input_ids: int64(ids, [batch, S]),
    attention_mask: int64(new Array<number>(batch * S).fill(1), [batch, S]),
  });
  const states = text[TEXT_OUTPUT];
  if (states === undefined) throw new Error(`Expected ${TEXT_OUTPUT} from the text encoder`);
  const guided = spec.guidanceScale > 1;
  const rowsB = guided ? 2 * batch : batch;
  // Guidance: the second half of the batch sees no text (zero states, zero mask).
  const stateData = new Float32Array(rowsB * S * (states.dims[2] as number));
  stateData.set(states.data as Float32Array);
  const maskData = new Array<number>(rowsB * S).fill(0).map((_, i) => (i < batch * S ? 1 : 0));
  const encoderStates = new ort.Tensor('float32', stateData, [rowsB, S, states.dims[2] as number]);
  const encoderMask = int64(maskData, [rowsB, S]);

  const steps = stepsFor(frames, K);
  const sequence = Array.from({ length: batch }, () =>
    Array.from({ length: K }, () => new Int32Array(steps + 1).fill(spec.padToken)),
  );
  const random = seededRandom(opts.seed);
  const empty = (): ort.Tensor => new ort.Tensor('float32', new Float32Array(0), [rowsB, spec.heads, 0, spec.headDim]);
  let past = new Map<string, ort.Tensor>();
  for (let l = 0; l < spec.layers; l += 1) {
    for (const kind of ['decoder', 'encoder'] as const)
      for (const part of ['key', 'value'] as const) past.set(pastName(l, kind, part), empty());
  }
  const stepOutputs = [DECODER_LOGITS];
  for (let l = 0; l < spec.layers; l += 1)
    stepOutputs.push(presentName(l, 'decoder', 'key'), presentName(l, 'decoder', 'value'));
  const allOutputs = [...sessions.decoder.outputNames];
  let inputIds = new Array<number>(rowsB * K).fill(spec.startToken);
  const cond = new Float32Array(spec.vocab);
  const uncond = new Float32Array(spec.vocab);
  const mixed = new Float32Array(spec.vocab);
  for (let step = 0; step < steps; step += 1) {
    if (opts.signal?.aborted === true) throw abortReason(opts.signal);
    const feeds: Record<string, ort.Tensor> = {
      [DECODER_INPUT_IDS]: int64(inputIds, [rowsB * K, 1]),
      [DECODER_ENCODER_STATES]: encoderStates,
      [DECODER_ENCODER_MASK]: encoderMask,
      [DECODER_USE_CACHE]: new ort.Tensor('bool', Uint8Array.of(step === 0 ? 0 : 1), [1]),
    };
    for (const [name, tensor] of past) feeds[name] = tensor;
    // After the first step the cross-attention cache is only read: fetch the logits and the
    // self-attention cache only, so nothing else is copied out of ONNX Runtime.
    const out = await sessions.decoder.run(feeds, step === 0 ? allOutputs : stepOutputs);
    const logits = out[DECODER_LOGITS];
    if (logits === undefined) throw new Error(`Expected ${DECODER_LOGITS} from the decoder`);
    const seqLen = logits.dims[1] as number;
    const vocab = logits.dims[2] as number;
    const data = logits.data as Float32Array;
    const position = step + 1;
    const next = new Array<number>(rowsB * K);
    for (let b = 0; b < batch; b += 1) {
      for (let k = 0; k < K; k += 1) {
        const row = b * K + k;
        const at = (r: number): number => (r * seqLen + seqLen - 1) * vocab;
        let token: number;
        if (isDelayed(position, k)) token = spec.padToken;
        else if (guided) {
          cond.set(data.subarray(at(row), at(row) + spec.vocab));
          uncond.set(data.subarray(at(row + batch * K), at(row + batch * K) + spec.vocab));
          token = sampleTopK(guide(cond, uncond, spec.guidanceScale, mixed), spec.topK, random);
        } else {
          token = sampleTopK(data.subarray(at(row), at(row) + spec.vocab), spec.topK, random);
        }
        (sequence[b]?.[k] as Int32Array)[position] = token;
        next[row] = token;
        if (guided) next[row + batch * K] = token;
      }
    }
    inputIds = next;
    const nextPast = new Map<string, ort.Tensor>();
    for (let l = 0; l < spec.layers; l += 1) {
      for (const part of ['key', 'value'] as const) {
        const dec = out[presentName(l, 'decoder', part)];
        if (dec === undefined) throw new Error(`Expected ${presentName(l, 'decoder', part)} from the decoder`);
        nextPast.set(pastName(l, 'decoder', part), dec);
        // The cross-attention cache is computed on the first step and then only read.
        const enc = step === 0 ? out[presentName(l, 'encoder', part)] : past.get(pastName(l, 'encoder', part));
        if (enc === undefined) throw new Error(`Expected ${presentName(l, 'encoder', part)} from the decoder`);
        nextPast.set(pastName(l, 'encoder', part), enc);
      }
    }
    past = nextPast;
    opts.onStep?.(step + 1, steps);
    await nextTurn();
  }
  if (opts.signal?.aborted === true) throw abortReason(opts.signal);
  const codes = undelay(sequence, frames);
  const audio = await sessions.audioDecoder.run({ [AUDIO_CODES]: int64(codes, [1, batch, K, frames]) });
  const values = audio[AUDIO_VALUES];
  if (values === undefined) throw new Error(`Expected ${AUDIO_VALUES} from encodec_decode`);
  const perSong = (values.data as Float32Array).length / batch;
  const samples = values.data as Float32Array;
  return Array.from({ length: batch }, (_, b) => samples.slice(b * perSong, (b + 1) * perSong));
}
