/**
 * CIEDE2000 colour difference (Sharma, Wu and Dalal, "The CIEDE2000 Color-Difference Formula:
 * Implementation Notes", 2005) between two pictures given as CIE L*a*b* (D65), and the conversions
 * that bring RGB in a named colour space to L*a*b*. Pure functions: the fidelity benchmark decodes,
 * these measure.
 */

export interface Lab {
  L: number;
  a: number;
  b: number;
}

const DEG = Math.PI / 180;

/** ΔE00 between two L*a*b* colours (kL = kC = kH = 1). */
export function ciede2000(x: Lab, y: Lab): number {
  const c1 = Math.hypot(x.a, x.b);
  const c2 = Math.hypot(y.a, y.b);
  const cMean = (c1 + c2) / 2;
  const c7 = cMean ** 7;
  const g = 0.5 * (1 - Math.sqrt(c7 / (c7 + 25 ** 7)));
  const a1 = (1 + g) * x.a;
  const a2 = (1 + g) * y.a;
  const c1p = Math.hypot(a1, x.b);
  const c2p = Math.hypot(a2, y.b);
  const hue = (b: number, a: number): number => {
    if (a === 0 && b === 0) return 0;
    const h = Math.atan2(b, a) / DEG;
    return h < 0 ? h + 360 : h;
  };
  const h1p = hue(x.b, a1);
  const h2p = hue(y.b, a2);
  const dLp = y.L - x.L;
  const dCp = c2p - c1p;
  let dhp = 0;
  if (c1p * c2p !== 0) {
    dhp = h2p - h1p;
    if (dhp > 180) dhp -= 360;
    else if (dhp < -180) dhp += 360;
  }
  const dHp = 2 * Math.sqrt(c1p * c2p) * Math.sin((dhp / 2) * DEG);
  const lMean = (x.L + y.L) / 2;
  const cpMean = (c1p + c2p) / 2;
  let hpMean = h1p + h2p;
  if (c1p * c2p !== 0) {
    if (Math.abs(h1p - h2p) <= 180) hpMean = (h1p + h2p) / 2;
    else hpMean = h1p + h2p < 360 ? (h1p + h2p + 360) / 2 : (h1p + h2p - 360) / 2;
  }
  const t =
    1 -
    0.17 * Math.cos((hpMean - 30) * DEG) +
    0.24 * Math.cos(2 * hpMean * DEG) +
    0.32 * Math.cos((3 * hpMean + 6) * DEG) -
    0.2 * Math.cos((4 * hpMean - 63) * DEG);
  const dTheta = 30 * Math.exp(-(((hpMean - 275) / 25) ** 2));
  const cp7 = cpMean ** 7;
  const rc = 2 * Math.sqrt(cp7 / (cp7 + 25 ** 7));
  const sl = 1 + (0.015 * (lMean - 50) ** 2) / Math.sqrt(20 + (lMean - 50) ** 2);
  const sc = 1 + 0.045 * cpMean;
  const sh = 1 + 0.015 * cpMean * t;
  const rt = -Math.sin(2 * dTheta * DEG) * rc;
  return Math.sqrt((dLp / sl) ** 2 + (dCp / sc) ** 2 + (dHp / sh) ** 2 + rt * (dCp / sc) * (dHp / sh));
}

/** The RGB spaces the fidelity corpus uses; each is its primaries' RGB->XYZ (D65) matrix and its transfer. */
export type RgbSpace = 'srgb' | 'display-p3' | 'adobe-rgb' | 'bt2020';

// Row-major RGB -> XYZ (D65) matrices.
const TO_XYZ: Readonly<Record<RgbSpace, readonly number[]>> = {
  srgb: [0.4124564, 0.3575761, 0.1804375, 0.2126729, 0.7151522, 0.072175, 0.0193339, 0.119192, 0.9503041],
  'display-p3': [0.4865709, 0.2656677, 0.1982173, 0.2289746, 0.6917385, 0.0792869, 0, 0.0451134, 1.0439444],
  'adobe-rgb': [0.576669, 0.1855582, 0.1882286, 0.297345, 0.6273636, 0.0752915, 0.0270314, 0.0706889, 0.9913375],
  bt2020: [0.636958, 0.1446169, 0.168881, 0.2627002, 0.6779981, 0.0593017, 0, 0.0280727, 1.0609851],
};

/** Electro-optical transfer of a space (encoded 0..1 to linear 0..1). sRGB's curve serves Display P3 too. */
function toLinear(space: RgbSpace, v: number): number {
  switch (space) {
    case 'srgb':
    case 'display-p3':
      return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    case 'adobe-rgb':
      return Math.max(0, v) ** 2.19921875;
    case 'bt2020':
      // BT.1886 with a black of 0: what an SDR BT.2020 picture means.
      return Math.max(0, v) ** 2.4;
  }
}

const WHITE = { x: 0.95047, y: 1, z: 1.08883 };

function labF(t: number): number {
  return t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116;
}

/** L*a*b* of one encoded RGB colour (components 0..1) in `space`. */
export function rgbToLab(space: RgbSpace, r: number, g: number, b: number): Lab {
  const m = TO_XYZ[space];
  const lr = toLinear(space, r);
  const lg = toLinear(space, g);
  const lb = toLinear(space, b);
  const X = (m[0]! * lr + m[1]! * lg + m[2]! * lb) / WHITE.x;
  const Y = (m[3]! * lr + m[4]! * lg + m[5]! * lb) / WHITE.y;
  const Z = (m[6]! * lr + m[7]! * lg + m[8]! * lb) / WHITE.z;
  const fx = labF(X);
  const fy = labF(Y);
  const fz = labF(Z);
  return { L: 116 * fy - 16, a: 500 * (fx - fy), b: 200 * (fy - fz) };
}

/**
 * Mean ΔE00 between two interleaved RGB pictures of the same size and channel count, both encoded in
 * `space`, with samples of `maxValue` full scale (255 or 65535). Alpha, when present, is ignored.
 */
export function meanCiede2000(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  options: { channels: number; space: RgbSpace; maxValue: number },
): number {
  if (a.length !== b.length)
    throw new RangeError(`Expected pictures of the same length but received ${a.length} and ${b.length}`);
  const { channels, space, maxValue } = options;
  const pixels = a.length / channels;
  if (pixels === 0) return 0;
  let sum = 0;
  for (let i = 0; i < a.length; i += channels) {
    const x = rgbToLab(space, a[i]! / maxValue, a[i + 1]! / maxValue, a[i + 2]! / maxValue);
    const y = rgbToLab(space, b[i]! / maxValue, b[i + 1]! / maxValue, b[i + 2]! / maxValue);
    sum += ciede2000(x, y);
  }
  return sum / pixels;
}
