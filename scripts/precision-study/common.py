"""Shared data helpers: calibration crops and evaluation inputs (NCHW float32, 0..255 RGB)."""
import glob, os
import numpy as np
from PIL import Image

# The package root (two folders up) and the study's work folder: frames, graphs, caches, results.
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
WORK = os.environ.get('PRECISION_STUDY_DIR', os.path.join(ROOT, '.cache', 'precision-study'))
HERE = WORK
PHOTOS = sorted(glob.glob(f'{ROOT}/test/fixtures/photos/*.png'))
CALIB_FRAMES = [f'{HERE}/frames/megamind_{t}.png' for t in ('0.5', '3.5', '6.5', '9.5')]
EVAL_FRAMES = [f'{HERE}/frames/megamind_{t}.png' for t in ('2.0', '5.0', '8.0')]
MODELS = {
    'x4plus': f'{ROOT}/models/realesrgan-x4plus.onnx',
    'x4fast': f'{ROOT}/models/realesrgan-x4fast.onnx',
}


def load_rgb(path):
    return np.asarray(Image.open(path).convert('RGB'), dtype=np.float32)  # HWC 0..255


def to_nchw(hwc):
    return np.ascontiguousarray(hwc.transpose(2, 0, 1)[None])


def eval_box(h, w, size):
    """Fixed evaluation crop: centre of the image."""
    y, x = (h - size) // 2, (w - size) // 2
    return y, x


def eval_inputs(net):
    """Centre crops: x4plus 64x64, x4fast 192x192 (the machine is 2 busy cores; fp32 x4plus takes ~9 s per 64x64)."""
    out = []
    for p in PHOTOS + EVAL_FRAMES:
        img = load_rgb(p)
        name = os.path.basename(p)
        s = 64 if net == 'x4plus' else 192
        y, x = eval_box(img.shape[0], img.shape[1], s)
        img = img[y:y + s, x:x + s]
        out.append((name, to_nchw(img)))
    return out


def calib_inputs(net, seed=0):
    """Random crops of the photos (avoiding the x4plus eval centre box) and of four Megamind
    frames that are not used for evaluation."""
    rng = np.random.default_rng(seed)
    size = 64 if net == 'x4plus' else 128
    per_photo, per_frame = (2, 2) if net == "x4plus" else (4, 3)
    crops = []
    for paths, n in ((PHOTOS, per_photo), (CALIB_FRAMES, per_frame)):
        for p in paths:
            img = load_rgb(p)
            h, w = img.shape[:2]
            ey, ex = eval_box(h, w, 128)
            got = 0
            while got < n:
                y, x = int(rng.integers(0, h - size + 1)), int(rng.integers(0, w - size + 1))
                if paths is PHOTOS and not (y + size <= ey or y >= ey + 128 or x + size <= ex or x >= ex + 128):
                    continue  # overlaps eval box
                crops.append(to_nchw(img[y:y + size, x:x + size]))
                got += 1
    return crops
