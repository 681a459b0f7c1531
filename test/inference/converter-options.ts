/** The graph options both converter tests build their small networks with (inference/convert/graph-walk.ts). */
import type { ConverterOptions } from '../../src/inference/convert/graph-walk.js';

export const TEST_GRAPH_OPTIONS: ConverterOptions = {
  inputName: 'input',
  outputName: 'output',
  inputScale: 1,
  outputScale: 1,
  opset: 17,
  graphName: 'test',
  producerName: 'test',
  producerVersion: '0',
  docString: '',
  metadata: [],
};
