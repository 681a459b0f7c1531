/**
 * The ncnn -> ONNX converter on small hand-made ncnn networks: ONNX Runtime's output of the
 * converted graph against an independent interpreter of the ncnn files written here (plain loops
 * over CHW arrays, no ONNX), with weights stored as float32 and as tagged float16.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { halfToFloat, NCNN_TAG_FP16 } from '../../../src/inference/convert/ncnn-bin.js';
import { NcnnFormatError, parseNcnnParam, type NcnnLayer } from '../../../src/inference/convert/ncnn-param.js';
import { ncnnToOnnx, type NcnnToOnnxOptions } from '../../../src/inference/convert/ncnn-to-onnx.js';
import { encodeModel } from '../../../src/inference/convert/onnx-builder.js';
import { macsPerInputPixel } from '../../../src/inference/graph-cost.js';
import { random } from '../../helpers/seeded-random.js';
import { TEST_GRAPH_OPTIONS } from '../converter-options.js';

const options: NcnnToOnnxOptions = { ...TEST_GRAPH_OPTIONS, inputChannels: 3 };

/** Float to IEEE half (round to nearest even on the dropped bits; the test values are normal numbers). */
function floatToHalf(value: number): number {
  const f32 = new Float32Array([value]);
  const bits = new Uint32Array(f32.buffer)[0] as number;
  const sign = (bits >>> 16) & 0x8000;
  const exponent = ((bits >>> 23) & 0xff) - 127 + 15;
  if (exponent <= 0) return sign;
  let half = sign | (exponent << 10) | ((bits >>> 13) & 0x3ff);
  const rest = bits & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half += 1;
  return half;
}

class BinWriter {
  private readonly parts: number[] = [];
  floats(values: readonly number[]): void {
    const b = new Uint8Array(new Float32Array(values).buffer);
    this.parts.push(...b);
  }
  tagged(values: readonly number[], fp16: boolean): void {
    if (!fp16) {
      this.parts.push(0, 0, 0, 0);
      this.floats(values);
      return;
    }
    const tag = new Uint8Array(new Uint32Array([NCNN_TAG_FP16]).buffer);
    this.parts.push(...tag);
    const halves = new Uint8Array(new Uint16Array(values.map(floatToHalf)).buffer);
    this.parts.push(...halves);
    while (this.parts.length % 4 !== 0) this.parts.push(0);
  }
  bytes(): Uint8Array {
    return Uint8Array.from(this.parts);
  }
}

type Tensor = { c: number; h: number; w: number; data: Float64Array };

/** An independent reading of the ncnn files: what each layer computes, in CHW, straight from the spec of the format. */
function interpret(paramText: string, bin: Uint8Array, input: Tensor): Tensor {
  const param = parseNcnnParam(paramText);
  const view = new DataView(bin.buffer, bin.byteOffset, bin.byteLength);
  let offset = 0;
  const raw = (n: number): number[] => {
    const out = Array.from({ length: n }, (_, i) => view.getFloat32(offset + i * 4, true));
    offset += n * 4;
    return out;
  };
  const tagged = (n: number): number[] => {
    const tag = view.getUint32(offset, true);
    offset += 4;
    if (tag === 0) return raw(n);
    const out = Array.from({ length: n }, (_, i) => halfToFloat(view.getUint16(offset + i * 2, true)));
    offset += Math.ceil((n * 2) / 4) * 4;
    return out;
  };
  const blobs = new Map<string, Tensor>();
  const p = (l: NcnnLayer, k: number, d: number): number => (l.params.get(k) as number | undefined) ?? d;
  const at = (t: Tensor, c: number, y: number, x: number): number =>
    y < 0 || x < 0 || y >= t.h || x >= t.w ? 0 : (t.data[(c * t.h + y) * t.w + x] as number);
  const make = (c: number, h: number, w: number): Tensor => ({ c, h, w, data: new Float64Array(c * h * w) });
  const map = (t: Tensor, f: (v: number, c: number) => number): Tensor => {
    const o = make(t.c, t.h, t.w);
    for (let i = 0; i < t.data.length; i += 1) o.data[i] = f(t.data[i] as number, Math.floor(i / (t.h * t.w)));
    return o;
  };
  for (const l of param.layers) {
    const ins = l.inputs.map((b) => blobs.get(b) as Tensor);
    let out: Tensor;
    switch (l.type) {
      case 'Input':
        out = input;
        break;
      case 'Split':
        for (const o of l.outputs) blobs.set(o, ins[0] as Tensor);
        continue;
      case 'Convolution': {
        const x = ins[0] as Tensor;
        const co = p(l, 0, 0);
        const k = p(l, 1, 1);
        const pad = p(l, 4, 0);
        const wts = tagged(p(l, 6, 0));
        const bias = p(l, 5, 0) ? raw(co) : new Array<number>(co).fill(0);
        out = make(co, x.h, x.w);
        for (let o = 0; o < co; o += 1)
          for (let y = 0; y < x.h; y += 1)
            for (let xx = 0; xx < x.w; xx += 1) {
              let s = bias[o] as number;
              for (let i = 0; i < x.c; i += 1)
                for (let ky = 0; ky < k; ky += 1)
                  for (let kx = 0; kx < k; kx += 1)
                    s += (wts[((o * x.c + i) * k + ky) * k + kx] as number) * at(x, i, y + ky - pad, xx + kx - pad);
              out.data[(o * x.h + y) * x.w + xx] = s;
            }
        const act = p(l, 9, 0);
        const slope = (l.params.get(10) as number[] | undefined)?.[0] ?? 0;
        if (act === 1) out = map(out, (v) => Math.max(0, v));
        if (act === 2) out = map(out, (v) => (v < 0 ? v * slope : v));
        break;
      }
      case 'Concat': {
        const c = ins.reduce((a, t) => a + t.c, 0);
        const first = ins[0] as Tensor;
        out = make(c, first.h, first.w);
        let o = 0;
        for (const t of ins) {
          out.data.set(t.data, o);
          o += t.data.length;
        }
        break;
      }
      case 'Eltwise': {
        const coeffs = (l.params.get(1) as number[] | undefined) ?? [];
        const first = ins[0] as Tensor;
        out = make(first.c, first.h, first.w);
        ins.forEach((t, j) => t.data.forEach((v, i) => (out.data[i] = (out.data[i] as number) + (coeffs[j] ?? 1) * v)));
        break;
      }
      case 'BinaryOp': {
        const op = p(l, 0, 0);
        const a = ins[0] as Tensor;
        const b = ins[1];
        const f = (x: number, y: number): number => (op === 0 ? x + y : op === 1 ? x - y : op === 2 ? x * y : x / y);
        out = map(a, (v) => v);
        out.data.forEach((v, i) => (out.data[i] = f(v, b === undefined ? p(l, 2, 0) : (b.data[i] as number))));
        break;
      }
      case 'Interp': {
        const a = ins[0] as Tensor;
        const s = p(l, 1, 1);
        out = make(a.c, a.h * s, a.w * s);
        for (let c = 0; c < a.c; c += 1)
          for (let y = 0; y < out.h; y += 1)
            for (let x = 0; x < out.w; x += 1)
              out.data[(c * out.h + y) * out.w + x] = at(a, c, Math.floor(y / s), Math.floor(x / s));
        break;
      }
      case 'PReLU': {
        const slopes = raw(p(l, 0, 0));
        out = map(ins[0] as Tensor, (v, c) =>
          v < 0 ? v * (slopes.length === 1 ? (slopes[0] as number) : (slopes[c] as number)) : v,
        );
        break;
      }
      case 'PixelShuffle': {
        const a = ins[0] as Tensor;
        const r = p(l, 0, 1);
        out = make(a.c / (r * r), a.h * r, a.w * r);
        // Mode 0: output channel c, sub-pixel (i, j) reads input channel c*r*r + i*r + j.
        for (let c = 0; c < out.c; c += 1)
          for (let y = 0; y < out.h; y += 1)
            for (let x = 0; x < out.w; x += 1)
              out.data[(c * out.h + y) * out.w + x] = at(
                a,
                c * r * r + (y % r) * r + (x % r),
                Math.floor(y / r),
                Math.floor(x / r),
              );
        break;
      }
      default:
        throw new Error(`test interpreter: no ${l.type}`);
    }
    blobs.set(l.outputs[0] as string, out);
  }
  const last = param.layers.at(-1) as NcnnLayer;
  return blobs.get(last.outputs[0] as string) as Tensor;
}

/**
 * Every supported layer in a small net shaped like the two Real-ESRGAN exports: a dense block with
 * Split and Concat, a 0.2-weighted Eltwise residual, nearest x2 up-sampling read by one
 * convolution (folded) and by two layers (kept), PReLU, PixelShuffle and a scalar BinaryOp.
 */
function network(fp16: boolean): { param: string; bin: Uint8Array } {
  const conv = (
    name: string,
    input: string,
    output: string,
    cin: number,
    cout: number,
    k: number,
    extra = '',
  ): string =>
    `Convolution ${name} 1 1 ${input} ${output} 0=${cout} 1=${k} 4=${(k - 1) / 2} 5=1 6=${cout * cin * k * k}${extra}`;
  const lines = [
    'Input in 0 1 data',
    'Split split_in 1 2 data d0 d1',
    conv('c0', 'd0', 'f0', 3, 4, 3),
    'Split s0 1 3 f0 f0a f0b f0c',
    conv('c1', 'f0a', 'f1', 4, 4, 3, ' 9=2 -23310=1,2.000000e-01'),
    'Concat cat 2 1 f0b f1 cat0',
    conv('c2', 'cat0', 'f2', 8, 4, 1),
    'Eltwise res 2 1 f2 f0c f3 0=1 -23301=2,2.000000e-01,1.000000e+00',
    'Interp up1 1 1 f3 u1 0=1 1=2.000000e+00 2=2.000000e+00',
    conv('c3', 'u1', 'f4', 4, 4, 3, ' 9=1'),
    'Interp up2 1 1 f4 u2 0=1 1=2.000000e+00 2=2.000000e+00',
    'Split s2 1 2 u2 u2a u2b',
    conv('c4', 'u2a', 'f5', 4, 4, 3),
    'BinaryOp add 2 1 f5 u2b f6 0=0',
    'PReLU pr 1 1 f6 f7 0=4',
    conv('c5', 'f7', 'f8', 4, 12, 3),
    'PixelShuffle ps 1 1 f8 f9 0=2',
    'Interp upin 1 1 d1 din 0=1 1=8.000000e+00 2=8.000000e+00',
    'BinaryOp skip 2 1 f9 din f10 0=0',
    'BinaryOp half 1 1 f10 output 0=2 1=1 2=5.000000e-01',
  ];
  const param = `7767517\n${lines.length} 30\n${lines.join('\n')}\n`;
  // The weights in file order: each convolution's kernel (tagged) and bias, the PReLU's slopes.
  const ordered = new BinWriter();
  const rand = random(7);
  const w = (n: number): number[] => Array.from({ length: n }, () => (rand() - 0.5) * 0.6);
  for (const line of lines) {
    const t = parseNcnnParam(`7767517\n1 1\n${line}\n`).layers[0] as NcnnLayer;
    if (t.type === 'Convolution') {
      const size = t.params.get(6) as number;
      ordered.tagged(w(size), fp16);
      ordered.floats(w(t.params.get(0) as number));
    } else if (t.type === 'PReLU') {
      ordered.floats([0.1, -0.2, 0.3, 0.25]);
    }
  }
  return { param, bin: ordered.bytes() };
}

async function runOnnx(bytes: Uint8Array, input: Float32Array, h: number, w: number): Promise<ort.Tensor> {
  const session = await ort.InferenceSession.create(bytes);
  const { output } = await session.run({ input: new ort.Tensor('float32', input, [1, 3, h, w]) });
  return output as ort.Tensor;
}

describe('parseNcnnParam', () => {
  it('reads layers, blobs, integers, floats and arrays', () => {
    const p = parseNcnnParam(
      '7767517\n2 3\nInput in 0 1 data\nConvolution c 1 1 data out 0=8 1=3 -23310=2,2.000000e-01,1\n',
    );
    expect(p.layers.map((l) => [l.type, l.name, l.inputs, l.outputs])).toEqual([
      ['Input', 'in', [], ['data']],
      ['Convolution', 'c', ['data'], ['out']],
    ]);
    expect(p.layers[1]?.params.get(0)).toBe(8);
    expect(p.layers[1]?.params.get(10)).toEqual([0.2, 1]);
  });

  it.each([
    ['1234\n0 0\n', 'Expected the ncnn param magic 7767517'],
    ['7767517\n2 1\nInput in 0 1 data\n', 'Expected 2 layers as the header says but the file has 1'],
    ['7767517\n1 1\nConvolution c 1 1 x\n', 'Expected type, name, counts and 2 blob names in layer 1 (c)'],
    ['7767517\n1 1\nInput in 0 1 data -23310=3,1,2\n', 'Expected 3 array values for key 10'],
  ])('refuses %j', (text, message) => {
    expect(() => parseNcnnParam(text)).toThrow(message);
  });
});

describe('ncnnToOnnx', () => {
  const h = 5;
  const w = 6;
  const rand = random(11);
  const input = Float32Array.from({ length: 3 * h * w }, () => rand());

  it.each([
    ['float32', false],
    ['float16', true],
  ])('matches an independent interpreter of the ncnn files (%s weights)', async (_kind, fp16) => {
    const { param, bin } = network(fp16);
    const converted = ncnnToOnnx(parseNcnnParam(param), bin, options);
    expect(converted.scale).toBe(8);
    expect(converted.outputChannels).toBe(3);
    const out = await runOnnx(encodeModel(converted.model), input, h, w);
    expect(out.dims).toEqual([1, 3, h * 8, w * 8]);
    const ref = interpret(param, bin, { c: 3, h, w, data: Float64Array.from(input) });
    let maxDiff = 0;
    (out.data as Float32Array).forEach((v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - (ref.data[i] as number)))));
    expect(maxDiff).toBeLessThan(1e-4);
  });

  it('folds the up-sampling read by one convolution only, with the same result as the literal graph', async () => {
    const { param, bin } = network(false);
    const folded = ncnnToOnnx(parseNcnnParam(param), bin, options);
    const literal = ncnnToOnnx(parseNcnnParam(param), bin, { ...options, foldUpsampling: false });
    const ops = (g: typeof folded) => (g.model.graph?.node ?? []).map((n) => n.opType);
    // up1 -> c3 folds; up2 is read by c4 and the residual add, upin by the skip add: both stay.
    expect(ops(folded).filter((o) => o === 'Resize')).toHaveLength(2);
    expect(ops(literal).filter((o) => o === 'Resize')).toHaveLength(3);
    // The residual's 0.2 rides in c2's weights; the one Mul left is the scalar BinaryOp.
    expect(ops(folded).filter((o) => o === 'Mul')).toHaveLength(1);
    const a = (await runOnnx(encodeModel(folded.model), input, h, w)).data as Float32Array;
    const b = (await runOnnx(encodeModel(literal.model), input, h, w)).data as Float32Array;
    let maxDiff = 0;
    a.forEach((v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - (b[i] as number)))));
    expect(maxDiff).toBeLessThan(1e-5);
    // Both do the same multiply-adds: the fold moves the convolution, it does not make it cheaper.
    expect(macsPerInputPixel(folded.model.graph!)).toBe(macsPerInputPixel(literal.model.graph!));
  });

  it('folds the range scales: a 0-1 network fed 0-255 answers 0-255', async () => {
    const { param, bin } = network(false);
    const plain = (await runOnnx(encodeModel(ncnnToOnnx(parseNcnnParam(param), bin, options).model), input, h, w))
      .data as Float32Array;
    const scaled255 = Float32Array.from(input, (v) => v * 255);
    const ranged = ncnnToOnnx(parseNcnnParam(param), bin, { ...options, inputScale: 1 / 255, outputScale: 255 });
    const out = (await runOnnx(encodeModel(ranged.model), scaled255, h, w)).data as Float32Array;
    let maxDiff = 0;
    out.forEach((v, i) => (maxDiff = Math.max(maxDiff, Math.abs(v - (plain[i] as number) * 255))));
    expect(maxDiff).toBeLessThan(0.01);
  });

  it('writes the same bytes every time', () => {
    const { param, bin } = network(true);
    const a = encodeModel(ncnnToOnnx(parseNcnnParam(param), bin, options).model);
    const b = encodeModel(ncnnToOnnx(parseNcnnParam(param), bin, options).model);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });

  it('counts parameters and the receptive field', () => {
    const { param, bin } = network(false);
    const converted = ncnnToOnnx(parseNcnnParam(param), bin, options);
    const convParams = [3 * 4 * 9 + 4, 4 * 4 * 9 + 4, 8 * 4 + 4, 4 * 4 * 9 + 4, 4 * 4 * 9 + 4, 4 * 12 * 9 + 12];
    expect(converted.params).toBe(convParams.reduce((a, b) => a + b, 0) + 4);
    // c0, c1 at 1x (1 + 1), c3 at 2x (0.5), c4 and c5 at 4x (0.25 each): 3 input pixels, rounded up.
    expect(converted.receptiveFieldRadius).toBe(3);
  });

  it.each([
    [
      'an unsupported layer, by type and name',
      (p: string) => p.replace('PReLU pr 1 1 f6 f7 0=4', 'Deconvolution dc 1 1 f6 f7 0=4'),
      'Unsupported ncnn layer type Deconvolution (layer dc)',
    ],
    [
      'a bilinear Interp',
      (p: string) => p.replace('Interp up1 1 1 f3 u1 0=1', 'Interp up1 1 1 f3 u1 0=2'),
      'Unsupported resize type 2 (only nearest) in ncnn Interp layer up1',
    ],
    [
      'a strided convolution',
      (p: string) => p.replace('0=4 1=3 4=1 5=1 6=108', '0=4 1=3 3=2 4=1 5=1 6=108'),
      'Unsupported stride or dilation other than 1 in ncnn Convolution layer c0',
    ],
  ])('refuses %s', (_what, edit, message) => {
    const { param, bin } = network(false);
    expect(() => ncnnToOnnx(parseNcnnParam(edit(param)), bin, options)).toThrow(message);
  });

  it('refuses weights that do not match the param file, and int8 storage', () => {
    const { param, bin } = network(false);
    expect(() => ncnnToOnnx(parseNcnnParam(param), bin.subarray(0, bin.length - 8), options)).toThrow(NcnnFormatError);
    expect(() => ncnnToOnnx(parseNcnnParam(param), Uint8Array.from([...bin, 0, 0, 0, 0]), options)).toThrow(
      'the .param and .bin do not match',
    );
    const int8 = Uint8Array.from(bin);
    new DataView(int8.buffer).setUint32(0, 0x000d4b38, true);
    expect(() => ncnnToOnnx(parseNcnnParam(param), int8, options)).toThrow('stored as int8');
  });
});

describe('halfToFloat', () => {
  it.each([
    [0x3c00, 1],
    [0xc000, -2],
    [0x3555, 0.333251953125],
    [0x0001, 2 ** -24],
    [0x7c00, Infinity],
  ])('0x%s', (h, f) => {
    expect(halfToFloat(h)).toBe(f);
  });
});
