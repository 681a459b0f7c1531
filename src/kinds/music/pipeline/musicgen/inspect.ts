/**
 * Checks a MusicGen folder before it is installed: the config files parse, the tokenizer is a
 * Unigram one, and the three graphs open in ONNX Runtime with the export's input and output names
 * (the decoder with as many layers as config.json says). Throws with the first problem found.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import ort from 'onnxruntime-node';
import {
  AUDIO_CODES,
  AUDIO_VALUES,
  countLayers,
  missingDecoderNames,
  MUSICGEN_FILES,
  TEXT_INPUTS,
  TEXT_OUTPUT,
} from './contract.js';
import { readSpec, type MusicgenSpec } from './folder.js';
import { parseTokenizer } from './tokenizer.js';

async function names(file: string): Promise<{ inputs: readonly string[]; outputs: readonly string[] }> {
  const session = await ort.InferenceSession.create(file, { logSeverityLevel: 3 });
  try {
    return { inputs: [...session.inputNames], outputs: [...session.outputNames] };
  } finally {
    await session.release();
  }
}

export async function inspectMusicgenFolder(dir: string): Promise<MusicgenSpec> {
  const spec = await readSpec(dir);
  parseTokenizer(JSON.parse(await readFile(path.join(dir, MUSICGEN_FILES.tokenizer), 'utf8')) as unknown);
  const text = await names(path.join(dir, MUSICGEN_FILES.textEncoder));
  const textMissing = [
    ...TEXT_INPUTS.filter((n) => !text.inputs.includes(n)),
    ...(text.outputs.includes(TEXT_OUTPUT) ? [] : [TEXT_OUTPUT]),
  ];
  if (textMissing.length > 0)
    throw new Error(`Expected ${MUSICGEN_FILES.textEncoder} to have ${textMissing.join(', ')}`);
  const decoder = await names(path.join(dir, MUSICGEN_FILES.decoder));
  const layers = countLayers(decoder.inputs);
  const missing = missingDecoderNames(decoder.inputs, decoder.outputs, spec.layers);
  if (layers !== spec.layers || missing.length > 0) {
    throw new Error(
      `Expected ${MUSICGEN_FILES.decoder} to be the merged decoder with ${spec.layers} layers but it has ${layers}${missing.length > 0 ? `; missing ${missing.slice(0, 4).join(', ')}` : ''}`,
    );
  }
  const audio = await names(path.join(dir, MUSICGEN_FILES.audioDecoder));
  if (!audio.inputs.includes(AUDIO_CODES) || !audio.outputs.includes(AUDIO_VALUES)) {
    throw new Error(`Expected ${MUSICGEN_FILES.audioDecoder} to map ${AUDIO_CODES} to ${AUDIO_VALUES}`);
  }
  return spec;
}
