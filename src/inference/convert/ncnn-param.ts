/**
 * ncnn's `.param` text format: a magic line (7767517), "layer_count blob_count", then one line per
 * layer: type, name, input count, output count, input blob names, output blob names, then
 * `key=value` pairs. A key of -23300-k marks an array for key k, written "n,v1,...,vn". Values
 * with a '.' or an exponent are floats, others integers. Layers come in topological order.
 */
export const NCNN_PARAM_MAGIC = 7767517;

export type NcnnParamValue = number | readonly number[];

export interface NcnnLayer {
  type: string;
  name: string;
  inputs: readonly string[];
  outputs: readonly string[];
  /** By ncnn's numeric key; arrays under their plain key (k, not -23300-k). */
  params: ReadonlyMap<number, NcnnParamValue>;
}

export interface NcnnParam {
  layers: readonly NcnnLayer[];
  blobCount: number;
}

export class NcnnFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NcnnFormatError';
  }
}

const ARRAY_KEY_BASE = -23300;

function parseNumber(text: string, where: string): number {
  const value = Number(text);
  if (text === '' || !Number.isFinite(value))
    throw new NcnnFormatError(`Expected a number in ${where} but received ${JSON.stringify(text)}`);
  return value;
}

function parsePair(pair: string, where: string): [number, NcnnParamValue] {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new NcnnFormatError(`Expected key=value in ${where} but received ${JSON.stringify(pair)}`);
  const key = parseNumber(pair.slice(0, eq), where);
  if (!Number.isInteger(key))
    throw new NcnnFormatError(`Expected an integer key in ${where} but received ${JSON.stringify(pair)}`);
  const value = pair.slice(eq + 1);
  if (key > ARRAY_KEY_BASE) return [key, parseNumber(value, where)];
  const [count, ...items] = value.split(',');
  const n = parseNumber(count ?? '', where);
  if (items.length !== n)
    throw new NcnnFormatError(
      `Expected ${n} array values for key ${ARRAY_KEY_BASE - key} in ${where} but received ${items.length}`,
    );
  return [ARRAY_KEY_BASE - key, items.map((item) => parseNumber(item, where))];
}

export function parseNcnnParam(text: string): NcnnParam {
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '');
  if (Number(lines[0]) !== NCNN_PARAM_MAGIC) {
    throw new NcnnFormatError(
      `Expected the ncnn param magic ${NCNN_PARAM_MAGIC} on the first line but received ${JSON.stringify(lines[0] ?? '')}`,
    );
  }
  const counts = (lines[1] ?? '').split(/\s+/).map((t) => parseNumber(t, 'the counts line'));
  const [layerCount, blobCount] = counts;
  if (counts.length !== 2 || layerCount === undefined || blobCount === undefined) {
    throw new NcnnFormatError(
      `Expected "layer_count blob_count" on the second line but received ${JSON.stringify(lines[1] ?? '')}`,
    );
  }
  const layers: NcnnLayer[] = lines.slice(2).map((line, index) => {
    const tokens = line.split(/\s+/);
    const [type, name, inCount, outCount] = tokens;
    const where = `layer ${index + 1} (${name ?? '?'})`;
    const nIn = parseNumber(inCount ?? '', where);
    const nOut = parseNumber(outCount ?? '', where);
    if (type === undefined || name === undefined || tokens.length < 4 + nIn + nOut) {
      throw new NcnnFormatError(
        `Expected type, name, counts and ${nIn + nOut} blob names in ${where} but received ${JSON.stringify(line)}`,
      );
    }
    const inputs = tokens.slice(4, 4 + nIn);
    const outputs = tokens.slice(4 + nIn, 4 + nIn + nOut);
    const params = new Map(tokens.slice(4 + nIn + nOut).map((pair) => parsePair(pair, where)));
    return { type, name, inputs, outputs, params };
  });
  if (layers.length !== layerCount) {
    throw new NcnnFormatError(`Expected ${layerCount} layers as the header says but the file has ${layers.length}`);
  }
  return { layers, blobCount };
}

/** A scalar parameter, or `fallback` when absent; arrays are refused. */
export function scalarParam(layer: NcnnLayer, key: number, fallback: number): number {
  const value = layer.params.get(key);
  if (value === undefined) return fallback;
  if (typeof value !== 'number')
    throw new NcnnFormatError(
      `Expected a single value for param ${key} of ${layer.type} ${layer.name} but received an array`,
    );
  return value;
}

export function arrayParam(layer: NcnnLayer, key: number): readonly number[] {
  const value = layer.params.get(key);
  if (value === undefined) return [];
  return typeof value === 'number' ? [value] : value;
}
