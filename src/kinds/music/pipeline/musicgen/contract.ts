/**
 * MusicGen's ONNX export contract (the Xenova/musicgen-small layout), shared by the loader, the
 * test-model generator and the install script: file names, tensor names, and the numbers of the
 * model family (32 kHz, 4 codebooks, 50 frames per second, pad/start token 2048).
 */
export const MUSICGEN_FILES = {
  textEncoder: 'onnx/text_encoder.onnx',
  decoder: 'onnx/decoder_model_merged.onnx',
  audioDecoder: 'onnx/encodec_decode.onnx',
  config: 'config.json',
  generationConfig: 'generation_config.json',
  tokenizer: 'tokenizer.json',
} as const;

export const REQUIRED_FILES: readonly string[] = Object.values(MUSICGEN_FILES);

/** Our record of an installed folder: every file's sha256, checked before the first load. */
export const FOLDER_MANIFEST = 'media-worker-model.json';

export const TEXT_INPUTS = ['input_ids', 'attention_mask'] as const;
export const TEXT_OUTPUT = 'last_hidden_state';
export const DECODER_INPUT_IDS = 'input_ids';
export const DECODER_ENCODER_STATES = 'encoder_hidden_states';
export const DECODER_ENCODER_MASK = 'encoder_attention_mask';
export const DECODER_USE_CACHE = 'use_cache_branch';
export const DECODER_LOGITS = 'logits';
export const AUDIO_CODES = 'audio_codes';
export const AUDIO_VALUES = 'audio_values';

export type KvKind = 'decoder' | 'encoder';
export type KvPart = 'key' | 'value';

export function pastName(layer: number, kind: KvKind, part: KvPart): string {
  return `past_key_values.${layer}.${kind}.${part}`;
}

export function presentName(layer: number, kind: KvKind, part: KvPart): string {
  return `present.${layer}.${kind}.${part}`;
}

/** Number of decoder layers, counted from the graph's past_key_values inputs. */
export function countLayers(inputNames: readonly string[]): number {
  let layers = 0;
  while (inputNames.includes(pastName(layers, 'decoder', 'key'))) layers += 1;
  return layers;
}

/** Names the decoder graph must have for `layers` layers; what is missing, if anything. */
export function missingDecoderNames(
  inputNames: readonly string[],
  outputNames: readonly string[],
  layers: number,
): string[] {
  const wantIn = [DECODER_INPUT_IDS, DECODER_ENCODER_STATES, DECODER_ENCODER_MASK, DECODER_USE_CACHE];
  const wantOut = [DECODER_LOGITS];
  for (let i = 0; i < layers; i += 1) {
    for (const kind of ['decoder', 'encoder'] as const) {
      for (const part of ['key', 'value'] as const) {
        wantIn.push(pastName(i, kind, part));
        wantOut.push(presentName(i, kind, part));
      }
    }
  }
  return [
    ...wantIn.filter((n) => !inputNames.includes(n)).map((n) => `input ${n}`),
    ...wantOut.filter((n) => !outputNames.includes(n)).map((n) => `output ${n}`),
  ];
}
