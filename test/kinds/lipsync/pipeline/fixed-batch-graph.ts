/** A Wav2Lip-contract graph with its batch fixed at 2, for the chunking tests (inline and threaded). */
import { buildModel, encodeModel, floatTensor, floatValueInfo, node } from '../../../../src/inference/index.js';

/** Output `out`: the masked face's channels plus 0 x the mel mean, so each face maps to itself. */
export function fixedBatchGraph(): Uint8Array {
  const select = new Float32Array(18);
  for (let c = 0; c < 3; c += 1) select[c * 6 + c] = 1;
  return encodeModel(
    buildModel({
      graphName: 'fixed',
      nodes: [
        node('Conv', ['video_frames', 'select'], ['face'], 'face', { kernel_shape: [1, 1] }),
        node('ReduceMean', ['mel_spectrogram'], ['level'], 'level', { axes: [1, 2, 3], keepdims: 1 }),
        node('Mul', ['level', 'zero'], ['nothing'], 'nothing'),
        node('Add', ['face', 'nothing'], ['out'], 'out'),
      ],
      initializers: [floatTensor('select', [3, 6, 1, 1], select), floatTensor('zero', [], Float32Array.of(0))],
      inputs: [floatValueInfo('mel_spectrogram', [2, 1, 80, 16]), floatValueInfo('video_frames', [2, 6, 96, 96])],
      outputs: [floatValueInfo('out', [2, 3, 96, 96])],
      opset: 17,
      producerName: 'test',
      producerVersion: '1',
      docString: '',
      metadata: [],
    }),
  );
}
