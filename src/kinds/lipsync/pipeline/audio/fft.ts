/**
 * A mixed-radix complex FFT for any length, planned once and reused.
 *
 * Wav2Lip's STFT uses n_fft = 800 = 4 * 4 * 2 * 5 * 5, not a power of two. A dense 800 x 401 DFT
 * would cost ~0.64 M multiply-adds per frame (1.5 G for the 2,400 frames of 30 s of audio, seconds
 * in JS); this decimation-in-time Cooley-Tukey with radix-4, -2 and small odd butterflies costs
 * ~30 k per frame, and `realPairSpectra` halves that again by transforming two real frames at once.
 *
 * Layout: the input is permuted once by mixed-radix digit reversal, after which every stage works in
 * place on contiguous blocks, so no scratch arrays are allocated per transform.
 */

interface Stage {
  radix: number;
  /** Size of each already-transformed sub-block this stage combines. */
  span: number;
  /** Twiddles W_L^(j k) for j = 1..radix-1, k = 0..span-1, as [re, im] pairs; L = radix * span. */
  twiddles: Float64Array;
}

function factorise(n: number): number[] {
  const factors: number[] = [];
  let rest = n;
  while (rest % 4 === 0) {
    factors.push(4);
    rest /= 4;
  }
  if (rest % 2 === 0) {
    factors.push(2);
    rest /= 2;
  }
  for (let p = 3; rest > 1; p += 2) {
    while (rest % p === 0) {
      factors.push(p);
      rest /= p;
    }
    // A large prime left over is handled by the generic butterfly (quadratic, but only in its size).
    if (p * p > rest && rest > 1) {
      factors.push(rest);
      rest = 1;
    }
  }
  return factors;
}

export class FftPlan {
  readonly size: number;
  private readonly order: Int32Array;
  private readonly stages: Stage[];
  /** Roots of unity W_r^p, [re, im] pairs, per odd radix used by the generic butterfly. */
  private readonly roots = new Map<number, Float64Array>();
  private readonly scratch: Float64Array;
  private readonly permuted: Float64Array;

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) {
      throw new RangeError(`Expected the FFT size to be a positive integer but received ${String(size)}`);
    }
    this.size = size;
    const factors = factorise(size);

    this.order = new Int32Array(size);
    let cursor = 0;
    // Sub-sequence j of a split by r is x[j], x[j + r], ...; its own split continues recursively.
    const place = (offset: number, stride: number, length: number, level: number): void => {
      if (length === 1) {
        this.order[cursor++] = offset;
        return;
      }
      const r = factors[level] ?? length;
      for (let j = 0; j < r; j++) place(offset + j * stride, stride * r, length / r, level + 1);
    };
    place(0, 1, size, 0);

    this.stages = [];
    let span = 1;
    for (let level = factors.length - 1; level >= 0; level--) {
      const radix = factors[level]!;
      const total = radix * span;
      const twiddles = new Float64Array(2 * (radix - 1) * span);
      for (let j = 1; j < radix; j++) {
        for (let k = 0; k < span; k++) {
          const angle = (-2 * Math.PI * j * k) / total;
          const at = 2 * ((j - 1) * span + k);
          twiddles[at] = Math.cos(angle);
          twiddles[at + 1] = Math.sin(angle);
        }
      }
      this.stages.push({ radix, span, twiddles });
      if (radix !== 2 && radix !== 4 && !this.roots.has(radix)) {
        const roots = new Float64Array(2 * radix);
        for (let p = 0; p < radix; p++) {
          roots[2 * p] = Math.cos((-2 * Math.PI * p) / radix);
          roots[2 * p + 1] = Math.sin((-2 * Math.PI * p) / radix);
        }
        this.roots.set(radix, roots);
      }
      span = total;
    }
    this.scratch = new Float64Array(4 * Math.max(2, ...factors));
    this.permuted = new Float64Array(2 * size);
  }

  /** Forward transform (e^{-2 pi i k n / N}, unscaled) of `re + i im`, in place. */
  transform(re: Float64Array, im: Float64Array): void {
    const n = this.size;
    if (re.length < n || im.length < n) {
      throw new RangeError(
        `Expected arrays of at least ${n} values for the FFT but received ${Math.min(re.length, im.length)}`,
      );
    }
    this.permute(re, im);
    for (const stage of this.stages) {
      if (stage.radix === 2) this.radix2(re, im, stage);
      else if (stage.radix === 4) this.radix4(re, im, stage);
      else this.radixGeneric(re, im, stage);
    }
  }

  private permute(re: Float64Array, im: Float64Array): void {
    const n = this.size;
    const tmp = this.permuted;
    for (let i = 0; i < n; i++) {
      const from = this.order[i]!;
      tmp[2 * i] = re[from]!;
      tmp[2 * i + 1] = im[from]!;
    }
    for (let i = 0; i < n; i++) {
      re[i] = tmp[2 * i]!;
      im[i] = tmp[2 * i + 1]!;
    }
  }
  private radix2(re: Float64Array, im: Float64Array, { span, twiddles }: Stage): void {
    const block = 2 * span;
    for (let base = 0; base < this.size; base += block) {
      for (let k = 0; k < span; k++) {
        const a = base + k;
        const b = a + span;
        const wr = twiddles[2 * k]!;
        const wi = twiddles[2 * k + 1]!;
        const br = re[b]!;
        const bi = im[b]!;
        const tr = br * wr - bi * wi;
        const ti = br * wi + bi * wr;
        const ar = re[a]!;
        const ai = im[a]!;
        re[a] = ar + tr;
        im[a] = ai + ti;
        re[b] = ar - tr;
        im[b] = ai - ti;
      }
    }
  }

  private radix4(re: Float64Array, im: Float64Array, { span, twiddles }: Stage): void {
    const block = 4 * span;
    for (let base = 0; base < this.size; base += block) {
      for (let k = 0; k < span; k++) {
        const i0 = base + k;
        const i1 = i0 + span;
        const i2 = i1 + span;
        const i3 = i2 + span;
        const t1 = 2 * k;
        const t2 = 2 * (span + k);
        const t3 = 2 * (2 * span + k);
        const x0r = re[i0]!;
        const x0i = im[i0]!;
        const y1r = re[i1]!;
        const y1i = im[i1]!;
        const y2r = re[i2]!;
        const y2i = im[i2]!;
        const y3r = re[i3]!;
        const y3i = im[i3]!;
        const w1r = twiddles[t1]!;
        const w1i = twiddles[t1 + 1]!;
        const w2r = twiddles[t2]!;
        const w2i = twiddles[t2 + 1]!;
        const w3r = twiddles[t3]!;
        const w3i = twiddles[t3 + 1]!;
        const x1r = y1r * w1r - y1i * w1i;
        const x1i = y1r * w1i + y1i * w1r;
        const x2r = y2r * w2r - y2i * w2i;
        const x2i = y2r * w2i + y2i * w2r;
        const x3r = y3r * w3r - y3i * w3i;
        const x3i = y3r * w3i + y3i * w3r;
        const s02r = x0r + x2r;
        const s02i = x0i + x2i;
        const d02r = x0r - x2r;
        const d02i = x0i - x2i;
        const s13r = x1r + x3r;
        const s13i = x1i + x3i;
        // (x1 - x3) * -i
        const d13r = x1i - x3i;
        const d13i = x3r - x1r;
        re[i0] = s02r + s13r;
        im[i0] = s02i + s13i;
        re[i1] = d02r + d13r;
        im[i1] = d02i + d13i;
        re[i2] = s02r - s13r;
        im[i2] = s02i - s13i;
        re[i3] = d02r - d13r;
        im[i3] = d02i - d13i;
      }
    }
  }

  private radixGeneric(re: Float64Array, im: Float64Array, { radix, span, twiddles }: Stage): void {
    const roots = this.roots.get(radix) ?? new Float64Array(0);
    const t = this.scratch;
    const block = radix * span;
    for (let base = 0; base < this.size; base += block) {
      for (let k = 0; k < span; k++) {
        t[0] = re[base + k]!;
        t[1] = im[base + k]!;
        for (let j = 1; j < radix; j++) {
          const at = base + j * span + k;
          const wr = twiddles[2 * ((j - 1) * span + k)]!;
          const wi = twiddles[2 * ((j - 1) * span + k) + 1]!;
          const xr = re[at]!;
          const xi = im[at]!;
          t[2 * j] = xr * wr - xi * wi;
          t[2 * j + 1] = xr * wi + xi * wr;
        }
        for (let q = 0; q < radix; q++) {
          let sr = 0;
          let si = 0;
          for (let j = 0, p = 0; j < radix; j++, p = (p + q) % radix) {
            const cr = roots[2 * p]!;
            const ci = roots[2 * p + 1]!;
            const xr = t[2 * j]!;
            const xi = t[2 * j + 1]!;
            sr += xr * cr - xi * ci;
            si += xr * ci + xi * cr;
          }
          t[2 * radix + 2 * q] = sr;
          t[2 * radix + 2 * q + 1] = si;
        }
        for (let q = 0; q < radix; q++) {
          re[base + q * span + k] = t[2 * radix + 2 * q]!;
          im[base + q * span + k] = t[2 * radix + 2 * q + 1]!;
        }
      }
    }
  }
}

/**
 * The magnitude spectra (bins 0..N/2) of two real frames with one complex transform: `a` goes in
 * the real part and `b` in the imaginary part, and conjugate symmetry separates them afterwards.
 * `re`/`im` are overwritten; `magA`/`magB` receive N/2 + 1 values each.
 */
export function realPairMagnitudes(
  plan: FftPlan,
  re: Float64Array,
  im: Float64Array,
  magA: Float64Array,
  magB: Float64Array,
): void {
  plan.transform(re, im);
  const n = plan.size;
  const half = Math.floor(n / 2);
  for (let k = 0; k <= half; k++) {
    const c = k === 0 ? 0 : n - k;
    const zr = re[k]!;
    const zi = im[k]!;
    const cr = re[c]!;
    const ci = -im[c]!;
    // A = (Z[k] + conj Z[N-k]) / 2, B = (Z[k] - conj Z[N-k]) / 2i
    magA[k] = 0.5 * Math.sqrt((zr + cr) ** 2 + (zi + ci) ** 2);
    magB[k] = 0.5 * Math.sqrt((zr - cr) ** 2 + (zi - ci) ** 2);
  }
}
