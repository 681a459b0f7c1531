"""The other engines of `media-worker bench engines`: PyTorch and raw ONNX Runtime (Python).

Given one of our converted Real-ESRGAN graphs (models/realesrgan-x4plus.onnx: RRDBNet, or
models/realesrgan-x4fast.onnx: SRVGGNetCompact, from `media-worker models prepare`), this program

1. builds the PyTorch reference network in basicsr's own structure, defined below as basicsr
   defines it (RRDBNet: conv_first, 23 RRDB of 3 ResidualDenseBlock, conv_body, two nearest x2
   interpolations each read by a 3x3 conv, conv_hr, conv_last; SRVGGNetCompact: body of convs and
   PReLUs, PixelShuffle, the nearest-upsampled input added), and loads it, strictly, with a
   basicsr state dict recovered from our graph. Our converter folds (src/inference/convert/): each
   nearest x2 + 3x3 conv is one phase convolution + DepthToSpace (upsample-conv.ts), a residual
   coefficient (0.2) is folded into the convolution producing the term (ncnn-to-onnx.ts), and the
   graph's 0..255 input and output scales (convert.ts: the network's native range is 0..1) are
   folded into the first and last convolutions where they can be. Each fold is undone exactly: the
   3x3 taps are the least-squares solution of the folding's linear map (its re-fold must give the
   phase kernels back, checked), coefficients and scales are divided out. basicsr's forward then
   runs the network as the official engine does: x / 255, nearest interpolate + 3x3 conv, x 255.
2. proves it: the reference's output against ONNX Runtime's on the same graph and input (PSNR on
   0..255, clamped; > 60 dB means the same function up to float32 rounding).
3. times the engines on one input with T threads: PyTorch fp32 (torch.set_num_threads(T),
   torch.inference_mode) and raw ONNX Runtime (intra_op_num_threads=T, otherwise its defaults) on
   the fp32 graph and on each --variant graph (e.g. an int8 one).

    python3 engines_reference.py MODEL.onnx [--variant [LABEL=]FILE.onnx]... [--threads 2]
        [--size 64 | --input FILE.f32 --height H --width W] [--rounds 5] [--outputs DIR] [--serve]

Without --serve: the engines run interleaved, --rounds rounds, their order rotated each round, and
one JSON line gives every run's seconds per engine. With --serve (how the bench drives it, so that
our own engine's runs interleave with these): one JSON line when ready, then per stdin line
`run ENGINE` one JSON line {"engine", "seconds"}; `quit` or end of input ends it. --outputs DIR
writes each engine's output (first, untimed run) as DIR/ENGINE.f32, raw float32 NCHW.

Exit 3 with {"ok": false, "error": ...} when torch, onnxruntime, onnx or numpy is missing.
"""
import argparse
import json
import os
import sys
import time


def fail(reason, code=3):
    print(json.dumps({"ok": False, "error": reason}), flush=True)
    sys.exit(code)


try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as error:
    fail(f"missing Python package: {error.name}")
try:
    import onnxruntime
except ImportError:
    fail("missing Python package: onnxruntime")
try:
    import torch
    from torch import nn
    from torch.nn import functional as F
except ImportError:
    fail("missing Python package: torch")


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# The networks, as basicsr defines them (basicsr/archs/rrdbnet_arch.py, srvgg_arch.py;
# Apache-2.0), without basicsr's weight initialisation: the weights are loaded.


class ResidualDenseBlock(nn.Module):
    def __init__(self, num_feat=64, num_grow_ch=32):
        super().__init__()
        self.conv1 = nn.Conv2d(num_feat, num_grow_ch, 3, 1, 1)
        self.conv2 = nn.Conv2d(num_feat + num_grow_ch, num_grow_ch, 3, 1, 1)
        self.conv3 = nn.Conv2d(num_feat + 2 * num_grow_ch, num_grow_ch, 3, 1, 1)
        self.conv4 = nn.Conv2d(num_feat + 3 * num_grow_ch, num_grow_ch, 3, 1, 1)
        self.conv5 = nn.Conv2d(num_feat + 4 * num_grow_ch, num_feat, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

    def forward(self, x):
        x1 = self.lrelu(self.conv1(x))
        x2 = self.lrelu(self.conv2(torch.cat((x, x1), 1)))
        x3 = self.lrelu(self.conv3(torch.cat((x, x1, x2), 1)))
        x4 = self.lrelu(self.conv4(torch.cat((x, x1, x2, x3), 1)))
        x5 = self.conv5(torch.cat((x, x1, x2, x3, x4), 1))
        return x5 * 0.2 + x


class RRDB(nn.Module):
    def __init__(self, num_feat, num_grow_ch=32):
        super().__init__()
        self.rdb1 = ResidualDenseBlock(num_feat, num_grow_ch)
        self.rdb2 = ResidualDenseBlock(num_feat, num_grow_ch)
        self.rdb3 = ResidualDenseBlock(num_feat, num_grow_ch)

    def forward(self, x):
        out = self.rdb1(x)
        out = self.rdb2(out)
        out = self.rdb3(out)
        return out * 0.2 + x


class RRDBNet(nn.Module):
    """basicsr's RRDBNet at scale 4 (no pixel_unshuffle: that is for scales 1 and 2)."""

    def __init__(self, num_in_ch=3, num_out_ch=3, num_feat=64, num_block=23, num_grow_ch=32):
        super().__init__()
        self.conv_first = nn.Conv2d(num_in_ch, num_feat, 3, 1, 1)
        self.body = nn.Sequential(*[RRDB(num_feat, num_grow_ch) for _ in range(num_block)])
        self.conv_body = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_up1 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_up2 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_hr = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(negative_slope=0.2, inplace=True)

    def forward(self, x):
        feat = self.conv_first(x)
        body_feat = self.conv_body(self.body(feat))
        feat = feat + body_feat
        feat = self.lrelu(self.conv_up1(F.interpolate(feat, scale_factor=2, mode="nearest")))
        feat = self.lrelu(self.conv_up2(F.interpolate(feat, scale_factor=2, mode="nearest")))
        return self.conv_last(self.lrelu(self.conv_hr(feat)))


class SRVGGNetCompact(nn.Module):
    """basicsr's SRVGGNetCompact with act_type='prelu'."""

    def __init__(self, num_in_ch=3, num_out_ch=3, num_feat=64, num_conv=32, upscale=4):
        super().__init__()
        self.upscale = upscale
        self.body = nn.ModuleList()
        self.body.append(nn.Conv2d(num_in_ch, num_feat, 3, 1, 1))
        self.body.append(nn.PReLU(num_parameters=num_feat))
        for _ in range(num_conv):
            self.body.append(nn.Conv2d(num_feat, num_feat, 3, 1, 1))
            self.body.append(nn.PReLU(num_parameters=num_feat))
        self.body.append(nn.Conv2d(num_feat, num_out_ch * upscale * upscale, 3, 1, 1))
        self.upsampler = nn.PixelShuffle(upscale)

    def forward(self, x):
        out = x
        for layer in self.body:
            out = layer(out)
        out = self.upsampler(out)
        base = F.interpolate(x, scale_factor=self.upscale, mode="nearest")
        out += base
        return out


# ----------------------------------------------------------------------------------------------
# Undoing the converter's folds.

RESIDUAL_SCALE = 0.2  # basicsr's, in both ResidualDenseBlock and RRDB


def fold_matrix(k, pad, s):
    """The folding of one axis (upsample-conv.ts): row (phase a, folded tap r) x column (tap t) is
    1 where tap t of the original kernel lands on folded tap r of phase a."""
    first = 0 - -(-pad // s)  # 0 - ceil(pad / s)
    last = (s - 1 + k - 1 - pad) // s
    size = last - first + 1
    m = np.zeros((s, size, k))
    for a in range(s):
        for t in range(k):
            m[a, (a + t - pad) // s - first, t] = 1
    return m, size


def unfold_phase_conv(weight, bias, s=2, k=3, pad=1):
    """The k x k kernel (and bias) whose fold by a nearest x s up-sampling (phases in DCR order,
    channel (a*s + b)*Cout + c) is `weight`; with the largest re-fold error relative to the
    kernel's largest tap, which must be float32 rounding (the fold is injective for k=3, s=2)."""
    rows, size = fold_matrix(k, pad, s)
    phases, cin, fh, fw = weight.shape
    cout = phases // (s * s)
    if fh != size or fw != size or phases != cout * s * s:
        raise ValueError(f"Expected a phase convolution of {s * s} x Cout outputs and {size}x{size} taps but received {weight.shape}")
    # M[(a, b, r, c), (t, u)] = rows[a, r, t] * rows[b, c, u]
    m = np.einsum("art,bcu->abrctu", rows, rows).reshape(s * s * size * size, k * k)
    folded = weight.astype(np.float64).reshape(s, s, cout, cin, size, size).transpose(0, 1, 4, 5, 2, 3).reshape(s * s * size * size, cout * cin)
    taps, *_ = np.linalg.lstsq(m, folded, rcond=None)
    refold_error = float(np.max(np.abs(m @ taps - folded)) / max(np.max(np.abs(folded)), 1e-30))
    kernel = taps.reshape(k, k, cout, cin).transpose(2, 3, 0, 1).astype(np.float32)
    out_bias = None
    if bias is not None:
        per_phase = bias.reshape(s * s, cout)
        if not np.all(per_phase == per_phase[0]):
            raise ValueError("Expected the phase convolution's bias to repeat per phase")
        out_bias = per_phase[0].copy()
    return kernel, out_bias, refold_error


class Graph:
    def __init__(self, path):
        self.model = onnx.load(path)
        g = self.model.graph
        self.nodes = list(g.node)
        self.inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
        self.input = g.input[0].name
        self.output = g.output[0].name
        self.producer = {o: n for n in self.nodes for o in n.output}
        self.readers = {}
        for n in self.nodes:
            for i in n.input:
                self.readers.setdefault(i, []).append(n)
        self.convs = [n for n in self.nodes if n.op_type == "Conv"]
        self.doc = self.model.doc_string

    def attrs(self, node):
        return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}

    def scalar_mul(self, node):
        """The scalar of a Mul by a constant, else None."""
        if node is None or node.op_type != "Mul":
            return None
        for name in node.input:
            if name in self.inits and self.inits[name].size == 1:
                return float(self.inits[name].reshape(()))
        return None

    def conv_weights(self, node):
        w = self.inits[node.input[1]].astype(np.float32)
        b = self.inits[node.input[2]].astype(np.float32) if len(node.input) > 2 else None
        return w, b

    def after(self, tensor, ops=("LeakyRelu", "PRelu", "Relu")):
        """The node reading `tensor`, looking through one pointwise activation."""
        readers = self.readers.get(tensor, [])
        if len(readers) == 1 and readers[0].op_type in ops:
            readers = self.readers.get(readers[0].output[0], [])
        return readers

    def io_scales(self):
        """(input scale folded into the first convs?, output scale folded into the last conv?), and their values."""
        if "RGB 0-255" not in self.doc:
            raise ValueError("Expected a graph of ours (doc string: input and output RGB 0-255)")
        in_readers = self.readers.get(self.input, [])
        explicit_in = [self.scalar_mul(n) for n in in_readers if self.scalar_mul(n) is not None]
        out_node = self.producer[self.output]
        explicit_out = self.scalar_mul(out_node)
        return {"input_folded": not explicit_in, "input_scale": explicit_in[0] if explicit_in else 1 / 255,
                "output_folded": explicit_out is None, "output_scale": explicit_out if explicit_out is not None else 255.0}


def rrdbnet_state(graph):
    """basicsr RRDBNet state dict from our x4plus graph, with what each fold undone came to."""
    convs = graph.convs
    num_block, rest = divmod(len(convs) - 6, 15)
    if rest != 0 or num_block < 1:
        raise ValueError(f"Expected 1 + 15 x blocks + 5 convolutions for RRDBNet but the graph has {len(convs)}")
    scales = graph.io_scales()
    state = {}
    notes = {"folded_residual_convs": 0, "explicit_residual_muls": 0, "phase_convs": 0, "max_refold_error": 0.0}

    def put(name, node, weight=None, bias=None):
        w, b = graph.conv_weights(node) if weight is None else (weight, bias)
        state[f"{name}.weight"] = torch.from_numpy(np.ascontiguousarray(w))
        state[f"{name}.bias"] = torch.from_numpy(np.ascontiguousarray(b))

    first = convs[0]
    w, b = graph.conv_weights(first)
    if scales["input_folded"]:
        w = w / np.float32(scales["input_scale"])  # conv_first carries x (1/255): basicsr's sees 0..1
    put("conv_first", first, w, b)
    for block in range(num_block):
        for r in range(3):
            for c in range(5):
                node = convs[1 + block * 15 + r * 5 + c]
                w, b = graph.conv_weights(node)
                if c == 4:
                    # conv5: x5 * 0.2 + x. Folded when conv5's output is read by the Add alone.
                    readers = graph.readers.get(node.output[0], [])
                    if len(readers) == 1 and readers[0].op_type == "Add":
                        w, b = w / np.float32(RESIDUAL_SCALE), b / np.float32(RESIDUAL_SCALE)
                        notes["folded_residual_convs"] += 1
                    elif len(readers) == 1 and graph.scalar_mul(readers[0]) is not None:
                        if abs(graph.scalar_mul(readers[0]) - RESIDUAL_SCALE) > 1e-7:
                            raise ValueError(f"Expected a residual coefficient of {RESIDUAL_SCALE} after {node.name}")
                        notes["explicit_residual_muls"] += 1
                    else:
                        raise ValueError(f"Expected {node.name} to be read by a residual Add or Mul")
                put(f"body.{block}.rdb{r + 1}.conv{c + 1}", node, w, b)
    put("conv_body", convs[1 + num_block * 15])
    for i, name in enumerate(("conv_up1", "conv_up2")):
        node = convs[2 + num_block * 15 + i]
        d2s = [n for n in graph.after(node.output[0]) if n.op_type == "DepthToSpace"]
        w, b = graph.conv_weights(node)
        if d2s:
            a = graph.attrs(d2s[0])
            if a.get("mode", b"DCR") != b"DCR":
                raise ValueError(f"Expected DCR phases after {node.name}")
            w, b, err = unfold_phase_conv(w, b, s=a["blocksize"])
            notes["phase_convs"] += 1
            notes["max_refold_error"] = max(notes["max_refold_error"], err)
        put(name, node, w, b)
    put("conv_hr", convs[4 + num_block * 15])
    last = convs[5 + num_block * 15]
    w, b = graph.conv_weights(last)
    if scales["output_folded"]:
        w, b = w / np.float32(scales["output_scale"]), b / np.float32(scales["output_scale"])
    put("conv_last", last, w, b)
    # The RRDB-level 0.2 cannot fold (its term is an Add's output): an explicit Mul each block.
    coeffs = [graph.scalar_mul(n) for n in graph.nodes if graph.scalar_mul(n) is not None]
    if sum(abs(c - RESIDUAL_SCALE) < 1e-7 for c in coeffs) != num_block:
        raise ValueError("Expected one 0.2 Mul per RRDB")
    config = {"num_feat": int(state["conv_first.weight"].shape[0]), "num_block": num_block,
              "num_grow_ch": int(state["body.0.rdb1.conv1.weight"].shape[0])}
    return RRDBNet(**config), state, {**notes, **scales, **config}


def srvgg_state(graph):
    """basicsr SRVGGNetCompact state dict from our x4fast graph."""
    convs = graph.convs
    prelus = [n for n in graph.nodes if n.op_type == "PRelu"]
    num_conv = len(convs) - 2
    if len(prelus) != num_conv + 1:
        raise ValueError(f"Expected one PReLU after every convolution but the last ({len(convs)} convs, {len(prelus)} PReLUs)")
    scales = graph.io_scales()
    last_w, _ = graph.conv_weights(convs[-1])
    num_feat = int(graph.conv_weights(convs[0])[0].shape[0])
    upscale = int(round((last_w.shape[0] / 3) ** 0.5))
    d2s = [n for n in graph.nodes if n.op_type == "DepthToSpace"]
    if len(d2s) != 1 or graph.attrs(d2s[0]).get("mode") != b"CRD" or graph.attrs(d2s[0])["blocksize"] != upscale:
        raise ValueError("Expected one DepthToSpace in CRD mode (PyTorch's PixelShuffle) of the upscale")
    state = {}
    for i, node in enumerate(convs):
        w, b = graph.conv_weights(node)
        state[f"body.{2 * i}.weight"] = torch.from_numpy(np.ascontiguousarray(w))
        state[f"body.{2 * i}.bias"] = torch.from_numpy(np.ascontiguousarray(b))
    for i, node in enumerate(prelus):
        state[f"body.{2 * i + 1}.weight"] = torch.from_numpy(graph.inits[node.input[1]].astype(np.float32).reshape(-1).copy())
    if scales["input_folded"] or scales["output_folded"]:
        # The nearest-upsampled input is added inside the network, after the last conv: neither
        # scale can fold into a convolution here, and a graph where one did is not ours.
        raise ValueError("Expected SRVGGNetCompact's input and output scales as explicit Muls")
    config = {"num_feat": num_feat, "num_conv": num_conv, "upscale": upscale}
    return SRVGGNetCompact(**config), state, {**scales, **config}


class Reference:
    """The basicsr network with its weights, run the way Real-ESRGAN's engine runs it: x / 255, net, x 255."""

    def __init__(self, path):
        graph = Graph(path)
        if any(n.op_type == "PRelu" for n in graph.nodes):
            self.arch = "SRVGGNetCompact"
            net, state, self.notes = srvgg_state(graph)
        else:
            self.arch = "RRDBNet"
            net, state, self.notes = rrdbnet_state(graph)
        net.load_state_dict(state, strict=True)  # every basicsr key, nothing else
        self.net = net.eval()
        self.state = state
        self.in_scale = float(np.float32(self.notes["input_scale"]))
        self.out_scale = float(self.notes["output_scale"])

    def __call__(self, x):
        return self.net(x * self.in_scale) * self.out_scale


def psnr(a, b):
    a = np.clip(a.astype(np.float64), 0, 255)
    b = np.clip(b.astype(np.float64), 0, 255)
    mse = float(np.mean((a - b) ** 2))
    return None if mse == 0 else float(10 * np.log10(255.0 ** 2 / mse))  # None (JSON null): identical


def ort_session(path, threads):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])


def make_engines(args, image):
    """name -> callable returning the output as numpy; the reference first, then ORT per graph."""
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set in this process
    started = time.perf_counter()
    reference = Reference(args.model)
    log(f"# reference {reference.arch} built from {os.path.basename(args.model)} in {time.perf_counter() - started:.1f} s: {json.dumps(reference.notes)}")
    x_torch = torch.from_numpy(image)

    def run_torch():
        with torch.inference_mode():
            return reference(x_torch).numpy()

    engines = {"pytorch-fp32": run_torch}
    graphs = [("fp32", args.model)] + args.variant
    for label, path in graphs:
        session = ort_session(path, args.threads)
        name = session.get_inputs()[0].name
        engines[f"ort-python-{label}"] = (lambda s, n: lambda: s.run(None, {n: image})[0])(session, name)
    return reference, engines


def parse_variant(text):
    label, sep, path = text.partition("=")
    if not sep:
        path = text
        label = os.path.splitext(os.path.basename(text))[0]
    if not os.path.exists(path):
        raise argparse.ArgumentTypeError(f"{path} does not exist")
    return label, path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--variant", type=parse_variant, action="append", default=[], help="[LABEL=]FILE.onnx, timed with raw ONNX Runtime")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=64, help="side of a seeded random input (without --input)")
    parser.add_argument("--input", help="raw float32 NCHW [1,3,H,W], 0..255")
    parser.add_argument("--height", type=int)
    parser.add_argument("--width", type=int)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--outputs", help="folder for each engine's output, ENGINE.f32")
    parser.add_argument("--serve", action="store_true")
    args = parser.parse_args()
    if args.input:
        image = np.fromfile(args.input, dtype=np.float32).reshape(1, 3, args.height, args.width)
    else:
        image = np.random.default_rng(1).uniform(0, 255, (1, 3, args.size, args.size)).astype(np.float32)
    reference, engines = make_engines(args, image)
    outputs = {}
    warm = {}
    for name, run in engines.items():  # the first call of each (untimed: allocations, packing)
        started = time.perf_counter()
        outputs[name] = run()
        warm[name] = time.perf_counter() - started
        if args.outputs:
            os.makedirs(args.outputs, exist_ok=True)
            outputs[name].astype(np.float32).tofile(os.path.join(args.outputs, f"{name}.f32"))
    expected = outputs["ort-python-fp32"]
    got = outputs["pytorch-fp32"]
    info = {
        "ok": True,
        "model": os.path.basename(args.model),
        "arch": reference.arch,
        "folds_undone": reference.notes,
        "input": f"{image.shape[3]}x{image.shape[2]}",
        "output": f"{got.shape[3]}x{got.shape[2]}",
        "threads": args.threads,
        "torch": torch.__version__,
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "onnxruntime": onnxruntime.__version__,
        "numpy": np.__version__,
        "psnr_pytorch_vs_ort": psnr(got, expected),
        "max_abs_pytorch_vs_ort": float(np.max(np.abs(np.clip(got, 0, 255) - np.clip(expected, 0, 255)))),
        "psnr_vs_ort_fp32": {name: psnr(out, expected) for name, out in outputs.items()},
        "first_call_seconds": warm,
        "engines": list(engines),
    }
    log(f"# PyTorch reference against ONNX Runtime on the same graph: {'identical' if info['psnr_pytorch_vs_ort'] is None else format(info['psnr_pytorch_vs_ort'], '.1f') + ' dB'}, largest difference {info['max_abs_pytorch_vs_ort']:.2g} of 255")
    if args.serve:
        print(json.dumps({**info, "ready": True}), flush=True)
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "quit":
                break
            if words[0] == "run" and len(words) == 2 and words[1] in engines:
                started = time.perf_counter()
                engines[words[1]]()
                print(json.dumps({"engine": words[1], "seconds": time.perf_counter() - started}), flush=True)
            else:
                print(json.dumps({"error": f"unknown command {line.strip()!r}; engines: {list(engines)}"}), flush=True)
        return
    names = list(engines)
    seconds = {name: [] for name in names}
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            started = time.perf_counter()
            engines[name]()
            seconds[name].append(time.perf_counter() - started)
        log(f"# round {r + 1}/{args.rounds}: " + ", ".join(f"{n} {seconds[n][-1]:.3f} s" for n in names))
    print(json.dumps({**info, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
