/**
 * Lip-sync's audio: decoding any accepted input to 16 kHz mono samples and fitting them to the
 * timeline (audio.ts), and Wav2Lip's mel features (mel.ts, on the mixed-radix FFT of fft.ts).
 * Depends on no other room; from the top level only on timeline.ts's `Rational`.
 */
export * from './audio.js';
export * from './fft.js';
export * from './mel.js';
