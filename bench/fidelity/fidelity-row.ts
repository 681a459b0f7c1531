/**
 * One line of `bench:fidelity`: what one corpus case measured. The image and the video halves of the
 * benchmark each produce these; bench/fidelity/fidelity.ts prints them side by side.
 */
export interface FidelityRow {
  /** The corpus case, for example `hdr10-hevc-rotated` or `png-16bit-gradient`. */
  case: string;
  /** Mean CIEDE2000 of the output brought back to the input's size against the input, on a patch chart, in the input's colour space. */
  deltaE2000?: number;
  /** Picture-to-sound offset, output minus input, in ms (video with audio only). */
  avOffsetMs?: number;
  /** Bits per sample in and out (`8`, `10`, `16`). */
  bitDepthIn: number;
  bitDepthOut: number;
  /** Streams in and out, each as `v:hevc`, `a:aac(eng)`, `s:subrip`, `alpha`, `icc:Display P3`, `exif`, ... */
  streamsIn: string[];
  streamsOut: string[];
  /** Anything else worth a word: the transfer in and out, a refusal's code. */
  notes?: string;
}
