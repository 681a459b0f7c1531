#!/usr/bin/env python3
"""
Reference values for the Wav2Lip mel spectrogram, computed independently of src/kinds/lipsync/pipeline/mel.ts.

Wav2Lip (audio.py + hparams.py, librosa 0.7.0) computes its audio features as:
  pre-emphasis y[n] = x[n] - 0.97 x[n-1]            (scipy.signal.lfilter([1, -0.97], [1]))
  STFT n_fft 800, hop 200, win 800, periodic Hann, center=True with *reflect* padding of n_fft/2
       (librosa 0.7's defaults; librosa >= 0.10 pads with zeros instead, which changes the edge frames)
  magnitude, 80 mel bands 55..7600 Hz, Slaney mel scale (htk=False) with area normalisation (norm=1)
  20*log10(max(1e-5, mel)) - 20, then clip(8 * (S + 100) / 100 - 4, -4, 4)

This script re-derives all of that from the formulas with numpy/scipy (no librosa), in float64,
along a different route than the TypeScript (numpy's rfft instead of a hand-written FFT, numpy's
pad instead of index arithmetic, dense matrix products instead of sparse bands), and writes:

  mel-reference.json   parameters, shapes, file names and the mel filterbank (sparse, per band)
  mel-synthetic.f32    [80, T] float32 little-endian, row-major, for the synthetic signal below
  mel-short.f32        the same for its first 300 samples (shorter than the reflect padding)
  mel-loud.f32         its first 4000 samples times 40, so that the +4 clip is exercised too
  mel-speech.f32       the same for speech-16k.wav (espeak-ng, resampled to 16 kHz mono s16)

Usage: python3 scripts/mel-reference.py test/kinds/lipsync/pipeline/fixtures
speech-16k.wav is made with espeak-ng and ffmpeg when it is missing; once committed it is read as is.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import scipy
import scipy.io.wavfile
import scipy.signal

SAMPLE_RATE = 16000
N_FFT = 800
HOP = 200
WIN = 800
N_MELS = 80
FMIN = 55.0
FMAX = 7600.0
PREEMPHASIS = 0.97
REF_LEVEL_DB = 20.0
MIN_LEVEL_DB = -100.0
MAX_ABS = 4.0

SPEECH_TEXT = "The quick brown fox jumps over the lazy dog."


def hz_to_mel(f):
    """Slaney's scale: linear below 1 kHz (3 mels per 200 Hz), logarithmic above."""
    f = np.asarray(f, dtype=np.float64)
    f_sp = 200.0 / 3.0
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(f >= min_log_hz, min_log_mel + np.log(np.maximum(f, 1e-12) / min_log_hz) / logstep, f / f_sp)


def mel_to_hz(m):
    m = np.asarray(m, dtype=np.float64)
    f_sp = 200.0 / 3.0
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = np.log(6.4) / 27.0
    return np.where(m >= min_log_mel, min_log_hz * np.exp(logstep * (m - min_log_mel)), f_sp * m)


def mel_filterbank():
    """[N_MELS, N_FFT/2+1] triangles between consecutive mel-spaced edges, each scaled to unit area in Hz/2."""
    bins = np.linspace(0.0, SAMPLE_RATE / 2.0, N_FFT // 2 + 1)
    edges = mel_to_hz(np.linspace(hz_to_mel(FMIN), hz_to_mel(FMAX), N_MELS + 2))
    lo = edges[:-2, None]
    mid = edges[1:-1, None]
    hi = edges[2:, None]
    rising = (bins[None, :] - lo) / (mid - lo)
    falling = (hi - bins[None, :]) / (hi - mid)
    tri = np.clip(np.minimum(rising, falling), 0.0, None)
    return tri * (2.0 / (hi - lo))


def stft_magnitude(y):
    window = 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(WIN) / WIN)  # periodic Hann
    padded = np.pad(y, N_FFT // 2, mode="reflect")
    count = 1 + (len(padded) - N_FFT) // HOP
    frames = np.stack([padded[t * HOP : t * HOP + N_FFT] for t in range(count)], axis=1)
    return np.abs(np.fft.rfft(frames * window[:, None], axis=0))


def wav2lip_mel(x, basis):
    y = scipy.signal.lfilter([1.0, -PREEMPHASIS], [1.0], np.asarray(x, dtype=np.float64))
    mel = basis @ stft_magnitude(y)
    db = 20.0 * np.log10(np.maximum(1e-5, mel)) - REF_LEVEL_DB
    return np.clip(2 * MAX_ABS * ((db - MIN_LEVEL_DB) / -MIN_LEVEL_DB) - MAX_ABS, -MAX_ABS, MAX_ABS)


def synthetic_signal():
    """Must match syntheticSignal() in test/kinds/lipsync/pipeline/audio/mel.test.ts operation for operation."""
    n = np.arange(24000, dtype=np.float64)
    t = n / 16000.0
    x = (
        0.6 * np.sin(2.0 * np.pi * (80.0 * t + 1300.0 * t * t))
        + 0.25 * np.sin(2.0 * np.pi * 440.0 * t)
        + 0.1 * np.sin(2.0 * np.pi * 6000.0 * t)
    )
    x[16000:17600] = 0.0  # a tenth of a second of digital silence: the -4 floor
    return x


def make_speech(path):
    espeak = shutil.which("espeak-ng")
    ffmpeg = shutil.which("ffmpeg")
    if espeak is None or ffmpeg is None:
        sys.exit("speech-16k.wav is missing and espeak-ng or ffmpeg is not installed to make it")
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "speech.wav")
        subprocess.run([espeak, "-w", raw, SPEECH_TEXT], check=True)
        subprocess.run(
            [ffmpeg, "-hide_banner", "-v", "error", "-y", "-i", raw, "-ac", "1", "-ar", str(SAMPLE_RATE),
             "-c:a", "pcm_s16le", "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:a", "+bitexact", path],
            check=True,
        )


def read_speech(path):
    rate, data = scipy.io.wavfile.read(path)
    if rate != SAMPLE_RATE or data.dtype != np.int16 or data.ndim != 1:
        sys.exit(f"{path}: expected 16 kHz mono 16-bit PCM, got {rate} Hz {data.dtype} {data.shape}")
    return data.astype(np.float64) / 32768.0


def write_f32(path, mel):
    np.ascontiguousarray(mel, dtype="<f4").tofile(path)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: mel-reference.py OUTPUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    basis = mel_filterbank()

    speech_path = os.path.join(out, "speech-16k.wav")
    if not os.path.exists(speech_path):
        make_speech(speech_path)

    signals = {
        "synthetic": synthetic_signal(),
        "short": synthetic_signal()[:300],
        "loud": synthetic_signal()[:4000] * 40.0,  # past full scale on purpose: reaches the +4 ceiling
        "speech": read_speech(speech_path),
    }
    cases = {}
    for name, x in signals.items():
        mel = wav2lip_mel(x, basis)
        file = f"mel-{name}.f32"
        write_f32(os.path.join(out, file), mel)
        cases[name] = {
            "file": file,
            "samples": int(len(x)),
            "bands": int(mel.shape[0]),
            "frames": int(mel.shape[1]),
            "min": float(mel.min()),
            "max": float(mel.max()),
            "mean": float(mel.mean()),
        }

    filterbank = []
    for row in basis:
        nz = np.nonzero(row)[0]
        filterbank.append({"start": int(nz[0]), "weights": [float(w) for w in row[nz[0] : nz[-1] + 1]]})

    meta = {
        "generator": "scripts/mel-reference.py",
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "params": {
            "sampleRate": SAMPLE_RATE, "nFft": N_FFT, "hop": HOP, "win": WIN, "melBands": N_MELS,
            "fmin": FMIN, "fmax": FMAX, "preemphasis": PREEMPHASIS, "refLevelDb": REF_LEVEL_DB,
            "minLevelDb": MIN_LEVEL_DB, "maxAbs": MAX_ABS,
        },
        "speechText": SPEECH_TEXT,
        "layout": "float32 little-endian, row-major [bands, frames]",
        "cases": cases,
        "filterbank": filterbank,
    }
    with open(os.path.join(out, "mel-reference.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    for name, c in cases.items():
        print(f"{name}: {c['samples']} samples -> [{c['bands']}, {c['frames']}] range {c['min']:.3f}..{c['max']:.3f}")


if __name__ == "__main__":
    main()
