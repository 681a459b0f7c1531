"""Quality of quantized variants vs the fp32 graph (onnxruntime 1.30.0 Python, CPU EP, 2 threads).
usage: quality.py NET VARIANT [VARIANT...]
PSNR on outputs converted to uint8 (clamp 0..255, round); colour difference = mean CIE76 dE
(sRGB D65 -> Lab, numpy implementation below) and mean |diff| per channel in 0..255 levels."""
import json, os, sys, time
import numpy as np
import onnxruntime as ort
import common

H = common.HERE


def to_u8(y):
    return np.clip(np.rint(y[0].transpose(1, 2, 0)), 0, 255).astype(np.uint8)


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float('inf') if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def srgb_to_lab(u8):
    c = u8.astype(np.float64) / 255.0
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    M = np.array([[0.4124564, 0.3575761, 0.1804375],
                  [0.2126729, 0.7151522, 0.0721750],
                  [0.0193339, 0.1191920, 0.9503041]])
    xyz = c @ M.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    L = 116 * f[..., 1] - 16
    a = 500 * (f[..., 0] - f[..., 1])
    b = 200 * (f[..., 1] - f[..., 2])
    return np.stack([L, a, b], -1)


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=['CPUExecutionProvider'])


if __name__ == '__main__':
    net, variants = sys.argv[1], sys.argv[2:]
    inputs = common.eval_inputs(net)
    ref_cache = f'{H}/models/{net}-fp32-ref.npz'
    if os.path.exists(ref_cache):
        refs = dict(np.load(ref_cache))
    else:
        s = session(common.MODELS[net])
        refs = {n: to_u8(s.run(None, {'input': x})[0]) for n, x in inputs}
        np.savez(ref_cache, **refs)
    rows = []
    for v in variants:
        s = session(f'{H}/models/{net}-{v}.onnx')
        for n, x in inputs:
            t = time.time()
            y = to_u8(s.run(None, {'input': x})[0])
            r = refs[n]
            d = np.abs(y.astype(np.int16) - r.astype(np.int16))
            de = np.linalg.norm(srgb_to_lab(y) - srgb_to_lab(r), axis=-1)
            row = dict(net=net, variant=v, image=n, size=f'{x.shape[3]}x{x.shape[2]}',
                       psnr=round(psnr(y, r), 2), mean_abs_rgb=[round(float(d[..., c].mean()), 3) for c in range(3)],
                       max_abs=int(d.max()), mean_dE76=round(float(de.mean()), 3),
                       p99_dE76=round(float(np.percentile(de, 99)), 2), secs=round(time.time() - t, 1))
            print(json.dumps(row), flush=True)
            rows.append(row)
    with open(f'{H}/quality-{net}.jsonl', 'a') as f:
        for r in rows:
            f.write(json.dumps(r) + '\n')
