#!/usr/bin/env python3
"""
Reference values for MuseTalk 1.5's Whisper input features, computed by transformers itself.

MuseTalk (musetalk/utils/audio_processor.py) loads the audio at 16 kHz mono, cuts it into 30 s
segments and runs each through transformers' WhisperFeatureExtractor (whisper-tiny's
preprocessor_config: 80 mel bins, n_fft 400, hop 160, 30 s chunks: the class's defaults, so no
download is needed). This script does exactly that on test/kinds/lipsync/pipeline/fixtures/speech-16k.wav (real
speech: espeak-ng, committed) and writes, next to it:

  whisper-mel-reference.json   transformers' version, the cases, their shapes and files, and the
                               value every frame past the stored ones holds (the padded silence)
  whisper-mel-<case>.f32       [80, STORED_FRAMES] float32 little-endian, band-major: the first
                               frames of the [80, 3000] features (the speech and some silence)

Usage: .cache/musetalk-python/venv/bin/python scripts/whisper-mel-reference.py test/kinds/lipsync/pipeline/fixtures
(the environment: python3 -m venv .cache/musetalk-python/venv; its pip install transformers numpy)
"""
import json
import os
import sys
import wave

import numpy as np
import transformers
from transformers import WhisperFeatureExtractor

STORED_FRAMES = 320
CASES = {
    # The clip as it is, and 1/20 as loud (the dynamic-range floor then sits elsewhere).
    "speech": 1.0,
    "speech-quiet": 0.05,
}


def read_wav(path):
    with wave.open(path, "rb") as w:
        assert w.getframerate() == 16000 and w.getnchannels() == 1 and w.getsampwidth() == 2
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    # librosa.load's scaling of 16-bit PCM.
    return data.astype(np.float32) / 32768.0


def main():
    out_dir = sys.argv[1]
    speech = read_wav(os.path.join(out_dir, "speech-16k.wav"))
    extractor = WhisperFeatureExtractor()
    cases = {}
    for name, gain in CASES.items():
        samples = (speech * np.float32(gain)).astype(np.float32)
        features = extractor(samples, sampling_rate=16000, return_tensors="np").input_features[0]
        assert features.shape == (80, 3000), features.shape
        rest = features[:, STORED_FRAMES:]
        assert np.all(rest == rest[0, 0]), "frames past the stored ones are expected to be the silence value"
        file = f"whisper-mel-{name}.f32"
        np.ascontiguousarray(features[:, :STORED_FRAMES], dtype="<f4").tofile(os.path.join(out_dir, file))
        cases[name] = {
            "file": file,
            "gain": gain,
            "samples": int(samples.shape[0]),
            "bands": 80,
            "frames": 3000,
            "storedFrames": STORED_FRAMES,
            "restValue": float(rest[0, 0]),
        }
    reference = {"transformers": transformers.__version__, "numpy": np.__version__, "cases": cases}
    with open(os.path.join(out_dir, "whisper-mel-reference.json"), "w") as f:
        json.dump(reference, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
