"""The ceiling: our ONNX network run by PyTorch on the GPU in float16, the network alone.

The graph is executed op by op with PyTorch's own kernels (cuDNN convolutions), weights and
structure read from our ONNX file with the `onnx` package: RRDBNet (x4plus) and SRVGGNetCompact
(x4fast) exactly as the worker runs them, upsampling included (our converter writes nearest-x2 +
conv as a phase convolution + DepthToSpace, which costs the same multiply-adds). What it measures
is what this GPU does with these weights when nothing but the network runs: no decode, tiling,
encode or host copies.

    python3 torch_reference.py MODEL.onnx --height 1000 --width 1000 [--runs 3] [--check-ort]

Prints one JSON line: seconds per call (best of --runs after a warm-up), output MP/s, and with
--check-ort the PSNR of torch's float16 output against ONNX Runtime's CPU float32 on a 64 px crop
(proof that the weights were read right). Exit 3 when torch or CUDA is missing (reason printed).
"""
import argparse
import json
import sys
import time


def fail(reason, code=3):
    print(json.dumps({"ok": False, "error": reason}))
    sys.exit(code)


try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as error:  # the GPU machine has both; a bare CPU machine may not
    fail(f"missing Python package: {error.name}")


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def depth_to_space(torch, x, block, mode):
    n, c, h, w = x.shape
    out_c = c // (block * block)
    if mode == "DCR":
        x = x.reshape(n, block, block, out_c, h, w).permute(0, 3, 4, 1, 5, 2)
    else:  # CRD, what torch's pixel_shuffle does
        x = x.reshape(n, out_c, block, block, h, w).permute(0, 1, 4, 2, 5, 3)
    return x.reshape(n, out_c, h * block, w * block)


class OnnxNetwork:
    """The ONNX graph as a torch callable: initializers become device tensors once."""

    SUPPORTED = {"Conv", "LeakyRelu", "PRelu", "Concat", "Add", "Mul", "DepthToSpace", "Resize", "Cast"}

    def __init__(self, torch, model, device, dtype):
        self.torch = torch
        graph = model.graph
        unknown = {n.op_type for n in graph.node} - self.SUPPORTED
        if unknown:
            raise ValueError(f"unsupported ONNX operators for the torch reference: {sorted(unknown)}")
        self.nodes = list(graph.node)
        self.weights = {}
        for init in graph.initializer:
            array = numpy_helper.to_array(init).astype(np.float32)
            self.weights[init.name] = torch.from_numpy(array).to(device=device, dtype=dtype)
        self.input = graph.input[0].name
        self.output = graph.output[0].name
        self.dtype = dtype
        # Each activation is dropped after its last reader: a 1 MP x4plus keeps ~1,000 of them otherwise (100+ GB).
        last_use = {}
        for i, node in enumerate(self.nodes):
            for name in node.input:
                last_use[name] = i
        self.drop_after = [[n for n in set(node.input) if n and last_use.get(n) == i and n not in self.weights and n != self.output]
                           for i, node in enumerate(self.nodes)]

    def __call__(self, x):
        torch = self.torch
        F = torch.nn.functional
        values = dict(self.weights)
        values[self.input] = x
        for i, node in enumerate(self.nodes):
            a = attrs(node)
            ins = [values[name] if name else None for name in node.input]
            op = node.op_type
            if op == "Conv":
                pads = a.get("pads", [0, 0, 0, 0])
                y = F.conv2d(ins[0], ins[1], ins[2] if len(ins) > 2 else None, padding=(pads[0], pads[1]), groups=a.get("group", 1))
            elif op == "LeakyRelu":
                y = F.leaky_relu(ins[0], a.get("alpha", 0.01))
            elif op == "PRelu":
                y = torch.where(ins[0] >= 0, ins[0], ins[0] * ins[1].reshape(1, -1, 1, 1) if ins[1].dim() == 1 else ins[0] * ins[1])
            elif op == "Concat":
                y = torch.cat(ins, dim=a["axis"])
            elif op == "Add":
                y = ins[0] + ins[1]
            elif op == "Mul":
                y = ins[0] * ins[1]
            elif op == "DepthToSpace":
                y = depth_to_space(torch, ins[0], a["blocksize"], a.get("mode", b"DCR").decode())
            elif op == "Resize":
                scales = ins[2].float().cpu().numpy()
                y = F.interpolate(ins[0], scale_factor=(float(scales[2]), float(scales[3])), mode="nearest")
            else:  # Cast: the whole graph runs in self.dtype
                y = ins[0].to(self.dtype)
            values[node.output[0]] = y
            for name in self.drop_after[i]:
                del values[name]
        return values[self.output]


def psnr(a, b):
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--height", type=int, default=1000)
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--check-ort", action="store_true")
    parser.add_argument("--cpu", action="store_true", help="float32 on the CPU (checking the reader without a GPU)")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        fail("PyTorch is not installed here")
    if not args.cpu and not torch.cuda.is_available():
        fail("PyTorch sees no CUDA device")
    device = "cpu" if args.cpu else "cuda"
    dtype = torch.float32 if args.cpu else torch.float16
    torch.backends.cudnn.benchmark = True
    model = onnx.load(args.model)
    net = OnnxNetwork(torch, model, device, dtype)
    result = {"ok": True, "model": args.model.split("/")[-1], "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
              "dtype": str(dtype).replace("torch.", ""), "torch": torch.__version__, "input": f"{args.width}x{args.height}"}
    rng = np.random.default_rng(1)
    image = torch.from_numpy(rng.uniform(0, 255, (1, 3, args.height, args.width)).astype(np.float32)).to(device=device, dtype=dtype)
    times = []
    with torch.inference_mode():
        for i in range(args.runs + 1):  # the first call picks cuDNN's algorithms: not timed
            if device == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            out = net(image)
            if device == "cuda":
                torch.cuda.synchronize()
            if i > 0:
                times.append(time.perf_counter() - started)
        scale = out.shape[2] // args.height
        best = min(times)
        result.update({"seconds": best, "runs": times, "scale": scale,
                       "output_mp_per_s": args.height * args.width * scale * scale / 1e6 / best})
        if args.check_ort:
            result["psnr_vs_ort_cpu"] = check_against_ort(torch, net, args.model, device, dtype)
    print(json.dumps(result))


def check_against_ort(torch, net, model_path, device, dtype):
    """PSNR of torch's output against ONNX Runtime's CPU provider on a 64 px pattern; None without onnxruntime."""
    try:
        import onnxruntime
    except ImportError:
        return None
    side = 64
    rng = np.random.default_rng(2)
    crop = rng.uniform(0, 255, (1, 3, side, side)).astype(np.float32)
    session = onnxruntime.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    expected = session.run(None, {session.get_inputs()[0].name: crop})[0]
    got = net(torch.from_numpy(crop).to(device=device, dtype=dtype)).float().cpu().numpy()
    return psnr(np.clip(expected, 0, 255), np.clip(got, 0, 255))


if __name__ == "__main__":
    main()
