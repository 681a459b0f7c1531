/**
 * Folds a nearest up-sampling into the convolution that reads it: an exact rewrite that moves the
 * convolution from the output resolution to the input resolution.
 *
 * With U the input I repeated s times on each axis and a stride-1 convolution of U, output pixel
 * (s*Y + a, s*X + b) reads U at (s*Y + a + t - padTop, ...) for kernel row t, which is input row
 * Y + floor((a + t - padTop) / s). So for each phase (a, b) in [0, s)^2 the output is a
 * convolution of I itself whose taps are the sums of the original taps landing on the same input
 * pixel. Zero padding agrees too: a U row lies outside the image exactly when its input row does.
 *
 * The phases become output channels in ONNX DepthToSpace DCR order, channel (a*s + b)*Cout + c,
 * so the rewritten graph is Conv (Cout*s*s outputs, at input resolution) then DepthToSpace(s, DCR).
 * It does the same multiply-adds as the original but never materialises the up-sampled tensor
 * (s*s times the input's size, with all of its channels) nor its im2col buffer, and gives the
 * convolution a wide output (Cout*s*s rather than, for the ESRGAN tails, 3 channels) that GEMM
 * kernels use well.
 */

/** A stride-1, dilation-1 convolution in ONNX layout. */
export interface ConvWeights {
  /** OIHW. */
  kernel: Float32Array;
  /** [out, in, kh, kw]. */
  shape: readonly [number, number, number, number];
  bias?: Float32Array;
  /** ONNX order: [top, left, bottom, right]. */
  pads: readonly [number, number, number, number];
}

/** The input offsets one axis of the folded kernel spans, for kernel size k, leading pad p, factor s. */
export function foldedAxis(k: number, padBegin: number, s: number): { first: number; size: number } {
  // 0 - x rather than -x: no -0 in a kernel offset or a pad.
  const first = 0 - Math.ceil(padBegin / s);
  const last = Math.floor((s - 1 + k - 1 - padBegin) / s);
  return { first, size: last - first + 1 };
}

/**
 * The convolution at input resolution that, followed by DepthToSpace(s, DCR), equals `conv` applied
 * to the nearest s-times up-sampling of its input.
 */
export function foldNearestUpsampleIntoConv(conv: ConvWeights, s: number): ConvWeights {
  if (!Number.isInteger(s) || s < 1)
    throw new RangeError(`Expected an integer up-sampling factor >= 1 but received ${s}`);
  const [cout, cin, kh, kw] = conv.shape;
  if (conv.kernel.length !== cout * cin * kh * kw) {
    throw new RangeError(
      `Expected ${cout * cin * kh * kw} kernel values for shape [${conv.shape.join(', ')}] but received ${conv.kernel.length}`,
    );
  }
  if (conv.bias !== undefined && conv.bias.length !== cout) {
    throw new RangeError(`Expected ${cout} bias values but received ${conv.bias.length}`);
  }
  const [top, left, bottom, right] = conv.pads;
  if (top + bottom !== kh - 1 || left + right !== kw - 1 || Math.min(...conv.pads) < 0) {
    throw new RangeError(`Expected 'same' pads for a ${kh}x${kw} kernel but received [${conv.pads.join(', ')}]`);
  }
  const rows = foldedAxis(kh, top, s);
  const cols = foldedAxis(kw, left, s);
  const phases = s * s;
  // Summed in float64 and rounded once, so a folded tap is the float32 nearest its exact sum.
  const sums = new Float64Array(phases * cout * cin * rows.size * cols.size);
  for (let a = 0; a < s; a += 1) {
    for (let b = 0; b < s; b += 1) {
      const phase = a * s + b;
      for (let t = 0; t < kh; t += 1) {
        const row = Math.floor((a + t - top) / s) - rows.first;
        for (let u = 0; u < kw; u += 1) {
          const col = Math.floor((b + u - left) / s) - cols.first;
          for (let c = 0; c < cout; c += 1) {
            const o = phase * cout + c;
            for (let i = 0; i < cin; i += 1) {
              const at = ((o * cin + i) * rows.size + row) * cols.size + col;
              sums[at] = (sums[at] as number) + (conv.kernel[((c * cin + i) * kh + t) * kw + u] as number);
            }
          }
        }
      }
    }
  }
  const folded: ConvWeights = {
    kernel: Float32Array.from(sums),
    shape: [phases * cout, cin, rows.size, cols.size],
    pads: [0 - rows.first, 0 - cols.first, rows.first + rows.size - 1, cols.first + cols.size - 1],
  };
  if (conv.bias !== undefined) {
    const bias = new Float32Array(phases * cout);
    for (let phase = 0; phase < phases; phase += 1) bias.set(conv.bias, phase * cout);
    folded.bias = bias;
  }
  return folded;
}
