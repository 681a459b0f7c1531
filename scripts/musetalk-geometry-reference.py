#!/usr/bin/env python3
"""
Reference values for MuseTalk 1.5's image operations, computed by OpenCV itself (the library the
reference runs): the face crop's cv2.resize(..., INTER_LANCZOS4) and the blend mask's
cv2.GaussianBlur(mask, (k, k), 0) with k = int(0.05 * side // 2 * 2) + 1 (musetalk/utils/blending.py).

Writes into the given folder:
  musetalk-geometry-reference.json  OpenCV's version, the cases and their files
  musetalk-lanczos-<case>.u8        cv2.resize of a box of test/fixtures/photos/astronaut.png (RGB)
  musetalk-blur-<case>.u8           cv2.GaussianBlur of the 0/255 mask drawn by blur_region() below

Usage: .cache/musetalk-python/venv/bin/python scripts/musetalk-geometry-reference.py test/kinds/lipsync/pipeline/fixtures
(the environment of scripts/whisper-mel-reference.py plus opencv-python-headless)
"""
import json
import os
import sys

import cv2
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHOTO = os.path.join(ROOT, "test", "fixtures", "photos", "astronaut.png")

# name: (x1, y1, x2, y2, size): a downscale (as a face larger than 256 px is) and an upscale.
LANCZOS = {
    "down": (150, 40, 330, 250, 64),
    "up": (200, 90, 237, 131, 64),
}
# name: side of the blend square (k = 5 from OpenCV's fixed table; 9 and 17 from its sigma formula).
BLUR = {"tiny": 100, "small": 180, "large": 320}


def blur_region(side):
    """0/255: a rectangle over the lower half with a disc cut out, so both edges and corners are blurred."""
    y, x = np.mgrid[0:side, 0:side]
    region = (y >= side // 2) & (x >= side // 5) & (x < side - side // 5) & (y < side - side // 10)
    region &= (x - side / 2) ** 2 + (y - side * 0.6) ** 2 > (side * 0.08) ** 2
    return np.where(region, 255, 0).astype(np.uint8)


def main():
    out_dir = sys.argv[1]
    bgr = cv2.imread(PHOTO, cv2.IMREAD_COLOR)
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    cases = {"lanczos": {}, "blur": {}}
    for name, (x1, y1, x2, y2, size) in LANCZOS.items():
        resized = cv2.resize(rgb[y1:y2, x1:x2], (size, size), interpolation=cv2.INTER_LANCZOS4)
        file = f"musetalk-lanczos-{name}.u8"
        np.ascontiguousarray(resized).tofile(os.path.join(out_dir, file))
        cases["lanczos"][name] = {"file": file, "box": [x1, y1, x2, y2], "size": size}
    for name, side in BLUR.items():
        k = int(0.05 * side // 2 * 2) + 1
        blurred = cv2.GaussianBlur(blur_region(side), (k, k), 0)
        file = f"musetalk-blur-{name}.u8"
        np.ascontiguousarray(blurred).tofile(os.path.join(out_dir, file))
        cases["blur"][name] = {"file": file, "side": side, "kernel": k}
    with open(os.path.join(out_dir, "musetalk-geometry-reference.json"), "w") as f:
        json.dump({"opencv": cv2.__version__, "photo": "test/fixtures/photos/astronaut.png", "cases": cases}, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
