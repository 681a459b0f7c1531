#!/usr/bin/env python3
"""The device check: run on the bare GPU machine (no Node, no network) from the repository root,
with the parts that `npm run device:pack` built carried in .device/p*/ (docs/benchmarks/gpu.md, "The
device check"). Standard library only; PyTorch, onnx and onnxruntime are used where present.

    python3 scripts/device/check.py [--out DIR] [--parts .device] [--work /tmp/mw-device] [--small]
        [--budget-s 330] [--steps upscale,musetalk] [--musetalk-precisions fp16,fp32] [--unpack-only]

Writes DIR/device-check.json and DIR/device-check.md (DIR: $OUT, else .device/report) and prints
the markdown last. Every step that cannot run says why (no adapter, a part not carried, no torch)
and the others go on; the exit status is 0 whenever the report was written.

--small: the simulation's sizes (tiny photo and clip, MuseTalk's test size on the CPU) for
`npm run device:simulate` and CI.
--steps: which measurements: `upscale` (Real-ESRGAN against upscayl-bin and PyTorch) and
`musetalk` (MuseTalk's frames/s against Wav2Lip's on graphs of the real UNet's cost built there).
--unpack-only: unpack the parts carried so far (a call that only brings a part) and stop.
"""
import argparse
import ctypes
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
STARTED = time.time()


def now():
    return round(time.time() - STARTED, 1)


def log(message):
    print(f"[{now():6.1f}s] {message}", flush=True)


# ---------------------------------------------------------------- parts


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unpack(parts_dir, work):
    """Unpacks every carried part once (a stamp per archive); returns (plan, items present, problems)."""
    plan, present, problems = None, set(), []
    for part in sorted(parts_dir.glob("p*")):
        manifest_path = part / "MANIFEST.json"
        if not manifest_path.is_file():
            continue
        manifest = json.loads(manifest_path.read_text())
        plan = manifest.get("plan", plan)
        for item in manifest["items"]:
            archive = part / item["file"]
            stamp = work / ".unpacked" / f"{item['name']}.{item['sha256'][:16]}"
            if stamp.exists():
                present.add(item["name"])
                continue
            if not archive.is_file():
                problems.append(f"{item['name']}: {archive} is missing")
                continue
            if sha256(archive) != item["sha256"]:
                problems.append(f"{item['name']}: {archive} does not match its sha256 (a broken transfer?)")
                continue
            with tarfile.open(archive) as tar:
                tar.extractall(work, filter="tar") if hasattr(tarfile, "data_filter") else tar.extractall(work)
            stamp.parent.mkdir(parents=True, exist_ok=True)
            stamp.touch()
            present.add(item["name"])
    return plan, present, problems


# ---------------------------------------------------------------- the machine


def run(cmd, env=None, timeout=None, cwd=None):
    """(exit status, stdout, stderr, seconds); status None when the program is absent or timed out."""
    started = time.time()
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, timeout=timeout, capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr, time.time() - started
    except FileNotFoundError as error:
        return None, "", f"not found: {error.filename}", time.time() - started
    except subprocess.TimeoutExpired as error:
        out = error.stdout.decode() if isinstance(error.stdout, bytes) else (error.stdout or "")
        return None, out, f"timed out after {timeout:.0f} s", time.time() - started


def gpu_info():
    if shutil.which("nvidia-smi") is None:
        return {"ok": False, "error": "nvidia-smi is not on this machine (no NVIDIA driver)"}
    status, out, err, _ = run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit", "--format=csv,noheader"], timeout=30)
    if status != 0:
        return {"ok": False, "error": (err or out).strip()[:300]}
    gpus = [dict(zip(["name", "driver", "memory", "max_sm_clock", "power_limit"], [v.strip() for v in line.split(",")])) for line in out.strip().splitlines()]
    return {"ok": True, "gpus": gpus}


VULKAN_PROBE = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
class AppInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p), ("pApplicationName", ctypes.c_char_p), ("applicationVersion", ctypes.c_uint32),
                ("pEngineName", ctypes.c_char_p), ("engineVersion", ctypes.c_uint32), ("apiVersion", ctypes.c_uint32)]
class CreateInfo(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int), ("pNext", ctypes.c_void_p), ("flags", ctypes.c_uint32), ("pApplicationInfo", ctypes.POINTER(AppInfo)),
                ("enabledLayerCount", ctypes.c_uint32), ("ppEnabledLayerNames", ctypes.c_void_p), ("enabledExtensionCount", ctypes.c_uint32), ("ppEnabledExtensionNames", ctypes.c_void_p)]
app = AppInfo(0, None, b"media-worker-device-check", 1, b"none", 1, (1 << 22) | (1 << 12))
info = CreateInfo(1, None, 0, ctypes.pointer(app), 0, None, 0, None)
instance = ctypes.c_void_p()
r = lib.vkCreateInstance(ctypes.byref(info), None, ctypes.byref(instance))
if r != 0:
    print(json.dumps({"ok": False, "error": f"vkCreateInstance returned {r} (-9: no Vulkan driver, VK_ERROR_INCOMPATIBLE_DRIVER)"})); sys.exit(0)
count = ctypes.c_uint32(0)
lib.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), None)
devices = (ctypes.c_void_p * count.value)()
lib.vkEnumeratePhysicalDevices(instance, ctypes.byref(count), devices)
TYPES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
out = []
for d in devices:
    props = ctypes.create_string_buffer(1024)  # VkPhysicalDeviceProperties: 4 uint32 + type + name[256] first
    lib.vkGetPhysicalDeviceProperties(ctypes.c_void_p(d), props)
    api, driver, vendor, device, kind = (int.from_bytes(props.raw[i * 4:i * 4 + 4], "little") for i in range(5))
    name = props.raw[20:276].split(b"\0")[0].decode(errors="replace")
    out.append({"name": name, "type": TYPES.get(kind, str(kind)), "vendor": hex(vendor), "api": f"{api >> 22}.{(api >> 12) & 0x3ff}.{api & 0xfff}"})
lib.vkDestroyInstance(instance, None)
print(json.dumps({"ok": True, "devices": out}))
"""


def vulkan_devices(env, loader):
    """The Vulkan physical devices the carried loader finds: what Dawn's Vulkan backend enumerates."""
    if loader is None:
        return {"ok": False, "error": "no Vulkan loader (libvulkan.so.1) carried or installed"}
    status, out, err, _ = run([sys.executable, "-c", VULKAN_PROBE, str(loader)], env=env, timeout=60)
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"ok": False, "error": f"the Vulkan probe failed (status {status}): {err.strip()[-300:]}"}


class GpuSampler:
    """nvidia-smi's utilisation and memory in use every 100 ms, stamped on arrival; the busy share and
    the memory peak of any interval afterwards."""

    def __init__(self):
        self.samples = []
        self.process = None
        if shutil.which("nvidia-smi") is None:
            return
        self.process = subprocess.Popen(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits", "-lms", "100"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            try:
                busy, memory = (float(v) for v in line.strip().split(",")[:2])
                self.samples.append((time.time(), busy, memory))
            except ValueError:
                pass

    def busy(self, start, end):
        inside = [v for t, v, _ in self.samples if start <= t <= end]
        return round(sum(inside) / len(inside), 1) if inside else None

    def memory_peak(self, start, end):
        """MiB in use at the interval's peak (every process on the GPU), None without samples."""
        inside = [m for t, _, m in self.samples if start <= t <= end]
        return max(inside) if inside else None

    def stop(self):
        if self.process is not None:
            self.process.terminate()


# ---------------------------------------------------------------- the check


class Check:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.work).resolve()
        self.app = self.work / "app"
        self.deadline = STARTED + args.budget_s
        self.report = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(STARTED)), "small": args.small,
                       "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version()},
                       "steps": [], "skipped": [], "rows": []}
        self.sampler = None

    def left(self):
        return self.deadline - time.time()

    def skip(self, what, why):
        log(f"skip {what}: {why}")
        self.report["skipped"].append({"step": what, "reason": why})

    def environment(self):
        env = {k: v for k, v in os.environ.items() if k not in ("NODE_OPTIONS",)}
        node_bin = self.work / "node" / "bin"
        env["PATH"] = os.pathsep.join([str(node_bin), str(self.work / "ffmpeg"), env.get("PATH", "/usr/bin:/bin")])
        env["FFMPEG_PATH"] = str(self.work / "ffmpeg" / "ffmpeg")
        libs = [str(self.work / "vulkan" / "usr" / "lib" / "x86_64-linux-gnu")]
        libs += [d for d in ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib") if os.path.isdir(d)]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(libs + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
        # The device notes: NVIDIA's Vulkan driver file lives under /usr/local/nvidia on these machines.
        standard = [Path(d) for d in ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d")]
        nvidia_icd = Path("/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json")
        if "VK_DRIVER_FILES" not in env and nvidia_icd.is_file() and not any(d.is_dir() and any(d.glob("nvidia*.json")) for d in standard):
            env["VK_DRIVER_FILES"] = str(nvidia_icd)
        env.setdefault("LOG_LEVEL", "warn")
        return env

    def choose_ffmpeg(self):
        """The worker's video pipeline needs ffmpeg 5.1 or later (-fps_mode): the machine's own if it has
        one, else the carried one if it passes; None (video rows skipped) when neither does."""
        candidates = [shutil.which("ffmpeg", path=os.environ.get("PATH", "")), self.env["FFMPEG_PATH"]]
        tried = []
        for ffmpeg in [c for c in candidates if c]:
            status, _, err, _ = run([ffmpeg, "-v", "error", "-f", "lavfi", "-i", "nullsrc=s=16x16", "-frames:v", "1", "-fps_mode", "passthrough", "-f", "null", "-"], timeout=30)
            if status == 0:
                return ffmpeg, tried
            version = run([ffmpeg, "-version"], timeout=30)[1].splitlines()[:1]
            tried.append(f"{ffmpeg} ({version[0] if version else 'no version'}): {(err.strip().splitlines() or ['failed'])[0]}")
        return None, tried

    def ffprobe(self):
        """The worker's ffprobe: the carried one (npm run device:pack -- --with-ffprobe), else the machine's."""
        carried = self.app / "node_modules" / "@ffprobe-installer" / "linux-x64" / "ffprobe"
        return str(carried) if carried.exists() else shutil.which("ffprobe", path=os.environ.get("PATH", ""))

    def loader(self):
        carried = self.work / "vulkan" / "usr" / "lib" / "x86_64-linux-gnu" / "libvulkan.so.1"
        if carried.exists():
            return carried
        for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"):
            if Path(d, "libvulkan.so.1").exists():
                return Path(d, "libvulkan.so.1")
        return None

    def node(self, args, timeout, what, document=False):
        """Runs a gpu-device.js (or other dist) command; its JSON lines (`document`: its stdout as one JSON
        document, a benchmark's --json), or None with the step skipped."""
        if self.left() < 5:
            self.skip(what, "the time budget is spent")
            return None
        node = self.work / "node" / "bin" / "node"
        status, out, err, seconds = run([str(node), *args], env=self.env, timeout=min(timeout, self.left()), cwd=self.app)
        records = []
        if document:
            try:
                records.append(json.loads(out))
            except ValueError:
                pass
        for line in [] if document else out.splitlines():
            if line.startswith("{"):
                try:
                    records.append(json.loads(line))
                except ValueError:
                    pass
        self.report["steps"].append({"step": what, "status": status, "seconds": round(seconds, 2), "stdout_tail": out.strip()[-600:], "stderr_tail": err.strip()[-400:]})
        if status != 0:
            errors = [r.get("error") for r in records if r.get("event") == "error"]
            self.skip(what, errors[0] if errors else (err.strip().splitlines() or [f"exit {status}"])[-1][:300])
            return None
        return records

    def row(self, kind, network, engine, input_desc, output_mp, seconds, start=None, end=None, note=""):
        busy = self.sampler.busy(start, end) if (self.sampler and start is not None) else None
        self.report["rows"].append({"kind": kind, "network": network, "engine": engine, "input": input_desc, "output_mp": float(f"{output_mp:.4g}"),
                                    "seconds": round(seconds, 3), "mp_per_s": float(f"{output_mp / seconds:.4g}") if seconds > 0 else None,
                                    "gpu_busy_percent": busy, "note": note})
        log(f"{network} | {engine} | {input_desc} | {seconds:.2f} s | busy {busy}")

    def run(self):
        args = self.args
        parts_dir = (REPO / args.parts).resolve()
        self.work.mkdir(parents=True, exist_ok=True)
        plan, present, problems = unpack(parts_dir, self.work)
        self.report["parts"] = {"present": sorted(present), "problems": problems, "plan": plan}
        if plan:
            missing = [i for i in plan.get("items", []) if i["name"] not in present]
            self.report["parts"]["missing"] = [f"{i['name']} (part {i['part']})" for i in missing]
        log(f"unpacked: {sorted(present)}; problems: {problems or 'none'}")
        if args.unpack_only:
            return
        self.env = self.environment()
        self.report["gpu"] = gpu_info()
        self.report["vulkan"] = vulkan_devices(self.env, self.loader())
        self.report["environment"] = {k: self.env.get(k) for k in ("VK_DRIVER_FILES", "LD_LIBRARY_PATH")}
        self.report["node_on_path_before"] = shutil.which("node", path=os.environ.get("PATH", ""))
        self.report["simulation"] = os.environ.get("DEVICE_SIMULATION")
        log(f"gpu: {self.report['gpu']}; vulkan: {self.report['vulkan']}")
        self.sampler = GpuSampler()
        try:
            steps = set(self.args.steps.split(","))
            if {"node", "app", "onnxruntime", "sharp"} - present:
                self.skip("everything in Node", f"parts missing: {sorted({'node', 'app', 'onnxruntime', 'sharp'} - present)}")
            else:
                if "upscale" in steps:
                    self.node_steps(present)
                if "musetalk" in steps:
                    self.musetalk_steps()
        finally:
            self.sampler.stop()

    def node_steps(self, present):
        small = self.args.small
        networks = ["realesrgan-x4fast"] + ([] if small else ["realesrgan-x4plus"])
        if not small and "ncnn-x4plus" not in present:
            networks.remove("realesrgan-x4plus")
            self.skip("x4plus", "the ncnn-x4plus part was not carried")
        # Our ONNX files, made here from the same ncnn weights upscayl-bin reads (checked against the manifests).
        ncnn = self.work / "upscayl" / "models"
        convert = self.node(["dist/scripts/convert-models.js", *networks, "--ncnn-dir", str(ncnn), "--out", str(self.app / "models")], 300, "convert ncnn to ONNX")
        if convert is None:
            return
        if small:
            photo = {"mp": 0.0004, "video": "32x18", "frames": 2}
            cpu = photo
        else:
            photo = {"mp": self.args.photo_mp, "video": "1920x1080", "frames": self.args.frames}
            cpu = {"mp": self.args.cpu_photo_mp, "video": "1920x1080", "frames": self.args.cpu_frames}
        data = self.work / "data"
        made = {}
        for tag, size in (("gpu", photo), ("cpu", cpu)):
            records = self.node(["dist/bench/inference/gpu-device.js", "inputs", "--work", str(data), "--tag", tag, "--photo-mp", str(size["mp"]),
                                 "--video-size", size["video"], "--frames", str(size["frames"])], 120, f"inputs ({tag})")
            if records:
                made[tag] = records[-1]
        if "gpu" not in made or "cpu" not in made:
            return
        self.inputs = made
        video_ffmpeg, tried = self.choose_ffmpeg()
        self.report["ffmpeg"] = {"video": video_ffmpeg, "refused": tried}
        opened = self.node(["dist/bench/inference/gpu-device.js", "open", "--provider", "webgpu", "--networks", ",".join(networks)], 180, "open WebGPU") or []
        self.report["webgpu_open"] = opened
        ok = {(r["network"], r["precision"]) for r in opened if r.get("ok")}
        for r in opened:
            if not r.get("ok"):
                self.skip(f"WebGPU {r['network']} {r['precision']}", r.get("error", "did not open"))
        # Issue 48: WORKER_PRECISION=int8 where each GPU provider is asked for (int8 on a GPU needs TensorRT).
        self.report["precision"] = self.node(["dist/bench/inference/gpu-device.js", "precision", "--precision", "int8",
                                              "--provider-lists", "tensorrt,cuda;cuda;webgpu"], 120, "WORKER_PRECISION=int8 per provider") or []
        # --small runs the photo through x4fast too: x4plus alone takes minutes on a small CPU.
        image_network = "realesrgan-x4plus" if "realesrgan-x4plus" in networks else "realesrgan-x4fast"
        self.jobs = [("image", image_network), ("video", "realesrgan-x4fast")]
        # The reference first: without it no row has a ratio, so it must not be what the budget cuts.
        self.torch_steps()
        for kind, network in self.jobs:
            if kind == "video" and video_ffmpeg is not None and self.ffprobe() is None:
                self.skip("ours video", f"{video_ffmpeg} passes but no ffprobe is here (carry it: npm run device:pack -- --with-ffprobe)")
                self.upscayl(kind, network, made["gpu"])
                continue
            if kind == "video" and video_ffmpeg is None:
                self.skip("ours video", "no ffmpeg 5.1 or later here (the worker's pipeline uses -fps_mode): " + "; ".join(tried)
                          + ". The npm registry's static ffmpeg (@ffmpeg-installer/linux-x64 4.1.0) is a 2018 build and no newer one is published there")
                self.upscayl(kind, network, made["gpu"])
                continue
            if kind == "video":
                self.env["FFMPEG_PATH"] = video_ffmpeg
            for precision in ("fp32", "fp16"):
                if (network, precision) in ok:
                    self.ours(kind, network, "webgpu", precision, made["gpu"], runs=2 if kind == "image" else 1)
            self.ours(kind, network, "cpu", "fp32", made["cpu"], runs=1)
            self.upscayl(kind, network, made["gpu"])

    def work_of(self, kind, inputs):
        if kind == "image":
            side = inputs["photoSide"]
            return inputs["photo"], f"{side}x{side} photo", side * side * 16 / 1e6
        w, h = (int(v) for v in inputs["video"].split("x"))
        return inputs["clip"], f"{inputs['video']} x {inputs['frames']} frames", w * h * 4 * inputs["frames"] / 1e6

    def ours(self, kind, network, provider, precision, inputs, runs):
        source, desc, output_mp = self.work_of(kind, inputs)
        out = self.work / "data" / f"ours-{kind}-{provider}-{precision}{Path(source).suffix}"
        records = self.node(["dist/bench/inference/gpu-device.js", "run", "--kind", kind, "--provider", provider, "--precision", precision,
                             "--input", source, "--out", str(out), "--runs", str(runs), "--network", network], 540, f"ours {kind} {provider} {precision}")
        for r in records or []:
            if r.get("event") == "run":
                label = f"ours, {provider} {precision}" + (" (cold: session open)" if r["cold"] and runs > 1 else "")
                self.row(kind, network, label, desc, output_mp, r["seconds"], r["startMs"] / 1000, r["endMs"] / 1000)

    def upscayl(self, kind, network, inputs):
        binary = self.work / "upscayl" / "upscayl-bin"
        if not binary.exists():
            self.skip(f"upscayl-bin {kind}", "upscayl-bin was not carried")
            return
        vulkan = self.report.get("vulkan", {})
        if not vulkan.get("ok") or not vulkan.get("devices"):
            self.skip(f"upscayl-bin {kind}", f"no adapter: {vulkan.get('error', 'Vulkan lists no device')}")
            return
        if self.left() < 10:
            self.skip(f"upscayl-bin {kind}", "the time budget is spent")
            return
        source, desc, output_mp = self.work_of(kind, inputs)
        models = str(self.work / "upscayl" / "models")
        data = self.work / "data"
        start = time.time()
        if kind == "image":
            status, _, err, seconds = run([str(binary), "-i", source, "-o", str(data / "upscayl-image.png"), "-m", models, "-n", network, "-s", "4"],
                                          env=self.env, timeout=min(300, self.left()))
        else:
            # File to file as a frame-folder tool runs it: decode to PNG, upscale the folder, encode 4K H.264.
            frames, up = data / "upscayl-frames", data / "upscayl-up"
            for d in (frames, up):
                shutil.rmtree(d, ignore_errors=True)
                d.mkdir(parents=True)
            ffmpeg = self.env["FFMPEG_PATH"]
            w, h = (int(v) for v in inputs["video"].split("x"))
            steps = [[ffmpeg, "-v", "error", "-y", "-i", source, str(frames / "%05d.png")],
                     [str(binary), "-i", str(frames), "-o", str(up), "-m", models, "-n", network, "-s", "4", "-f", "png"],
                     [ffmpeg, "-v", "error", "-y", "-framerate", "30", "-i", str(up / "%05d.png"), "-vf", f"scale={w * 2}:{h * 2}:flags=lanczos",
                      "-c:v", "libx264", "-crf", "18", "-pix_fmt", "yuv420p", str(data / "upscayl-clip.mp4")]]
            status, err = 0, ""
            for cmd in steps:
                status, _, err, _ = run(cmd, env=self.env, timeout=max(1, min(300, self.left())))
                if status != 0:
                    break
            seconds = time.time() - start
        if status != 0:
            self.skip(f"upscayl-bin {kind}", f"failed (status {status}): {err.strip()[-300:]}")
            return
        self.row(kind, network, "upscayl-bin (ncnn, Vulkan)", desc, output_mp, seconds, start, time.time())

    def torch_steps(self):
        models = self.app / "models"
        for kind, network in getattr(self, "jobs", []):
            model = models / f"{network}.onnx"
            if not model.exists():
                self.skip(f"torch {network}", "its ONNX file was not made (see the steps above)")
                continue
            if self.left() < 10:
                self.skip(f"torch {network}", "the time budget is spent")
                continue
            inputs = getattr(self, "inputs", {}).get("gpu")
            if inputs is None:
                self.skip(f"torch {network}", "no inputs")
                continue
            if kind == "image":
                h = w = inputs["photoSide"]
                calls = 1
            else:
                w, h = (int(v) for v in inputs["video"].split("x"))
                calls = inputs["frames"]
            start = time.time()
            status, out, err, _ = run([sys.executable, str(HERE / "torch_reference.py"), str(model), "--height", str(h), "--width", str(w), "--check-ort"],
                                      timeout=min(240, self.left()))
            try:
                result = json.loads(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                result = {"ok": False, "error": f"status {status}: {err.strip()[-300:]}"}
            self.report.setdefault("torch", {})[network] = result
            if not result.get("ok"):
                self.skip(f"torch {network}", result.get("error", "failed"))
                continue
            _, desc, output_mp = self.work_of(kind, inputs)
            self.row(kind, network, f"PyTorch {result['dtype']} reference (network only)", desc, output_mp, result["seconds"] * calls, start, time.time(),
                     note=f"PSNR vs ONNX Runtime CPU {result.get('psnr_vs_ort_cpu')}")

    # ------------------------------------------------------------ MuseTalk (issue 60 item 5)

    def musetalk_providers(self):
        """The providers MuseTalk is timed on: the GPU ones this onnxruntime-node can start (its CUDA
        provider only where its library was carried), the CPU in --small."""
        if self.args.small:
            return ["cpu"]
        cuda = self.app / "node_modules" / "onnxruntime-node" / "bin" / "napi-v6" / "linux" / "x64" / "libonnxruntime_providers_cuda.so"
        if cuda.exists():
            return ["cuda", "webgpu"]
        self.skip("MuseTalk on cuda", "onnxruntime-node's CUDA provider is not carried (its libraries are about 300 MB and come from a registry "
                  "these machines cannot reach: docs/benchmarks/gpu.md); WebGPU is the GPU path here")
        return ["webgpu"]

    def musetalk_build(self, name, size, precision, models):
        """Builds a sized musetalk-test network (scripts/make-test-musetalk-model.ts --name) into `models`;
        its `built` record (seconds, bytes, UNet parameters), or None with the step skipped."""
        extra = ["--external-data-above", "0"] if size == "test" else []
        records = self.node(["dist/scripts/make-test-musetalk-model.js", "--name", name, "--models-dir", str(models), "--size", size,
                             "--precision", precision, *extra], 300, f"MuseTalk build {size} {precision}")
        built = [r for r in records or [] if r.get("event") == "built"]
        return built[-1] if built else None

    def musetalk_bench(self, name, provider, frames, repeat, models, what):
        """`bench musetalk` at batch 8 on exactly `provider` (--strict-providers); (its data, start, end) or None."""
        start = time.time()
        records = self.node(["dist/bench/music-lipsync/musetalk.js", "--json", "--frames", str(frames), "--batch", "8", "--repeat", str(repeat),
                             "--threads", "2" if self.args.small else "0", "--providers", provider, "--musetalk", name,
                             "--musetalk-dir", str(models), "--strict-providers"], 420, what, document=True)
        data = (records or [{}])[0].get("data")
        return (data, start, time.time()) if data else None

    def musetalk_steps(self):
        """MuseTalk's network stage against Wav2Lip's on the same frames at batch 8 (bench musetalk), on graphs
        of the real cost built here (UNet 822 M parameters, VAE 34 M + 49 M, Whisper encoder 8 M; random weights):
        fp16 first, then fp32 while time is left. A
        test-size build opens on each GPU provider first, so a provider that cannot start is skipped before a
        1.6 GB graph is opened on the CPU. --small: the test size with every weight outside the graphs, on the CPU."""
        small = self.args.small
        models = self.work / "musetalk-models"
        shutil.rmtree(models, ignore_errors=True)
        size = "test" if small else "real"
        frames = 8 if small else self.args.musetalk_frames
        self.report["musetalk"] = []
        providers = self.musetalk_providers()
        if not small:
            if self.musetalk_build("musetalk-probe", "test", "fp16", models) is None:
                return
            for provider in list(providers):
                if self.musetalk_bench("musetalk-probe", provider, 8, 1, models, f"MuseTalk probe on {provider}") is None:
                    providers.remove(provider)
        if not providers:
            return
        for precision in self.args.musetalk_precisions.split(","):
            # A real-size build and one run take a minute or two: not started when less is left.
            if not small and self.left() < 120:
                self.skip(f"MuseTalk {size} {precision}", f"the time budget is spent ({self.left():.0f} s left)")
                continue
            name = f"musetalk-{'small' if small else 'real'}-{precision}"
            built = self.musetalk_build(name, size, precision, models)
            if built is None:
                continue
            for provider in providers:
                measured = self.musetalk_bench(name, provider, frames, 1 if small else 3, models, f"MuseTalk {size} {precision} on {provider}")
                if measured is None:
                    continue
                data, start, end = measured
                muse, wav = data["musetalk"], data["wav2lip"]
                row = {"network": name, "precision": precision, "provider": muse["provider"], "batch": data["batch"], "frames": data["frames"],
                       "musetalk_fps": round(muse["framesPerSecond"], 2), "wav2lip_fps": round(wav["framesPerSecond"], 2),
                       "wav2lip_provider": wav["provider"], "open_s": round(muse["openSeconds"], 1), "build_s": built["seconds"],
                       "bytes": built["bytes"], "unet_parameters": built["unetParameters"], "parameters": built.get("parameters"),
                       "weights_outside": built.get("external", []),
                       "gpu_memory_peak_mib": self.sampler.memory_peak(start, end) if self.sampler else None,
                       "gpu_busy_percent": self.sampler.busy(start, end) if self.sampler else None}
                self.report["musetalk"].append(row)
                log(f"MuseTalk {name} on {row['provider']}: {row['musetalk_fps']} frames/s (Wav2Lip {row['wav2lip_fps']})")
            shutil.rmtree(models / "musetalk" / name, ignore_errors=True)

    def finish(self, out_dir):
        rows = self.report["rows"]
        for r in rows:
            ref = next((x for x in rows if x["kind"] == r["kind"] and x["engine"].startswith("PyTorch")), None)
            r["ratio_to_reference"] = round(ref["mp_per_s"] / r["mp_per_s"], 2) if ref and r["mp_per_s"] else None
        self.report["seconds"] = now()
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "device-check.json").write_text(json.dumps(self.report, indent=2))
        md = markdown(self.report)
        (out_dir / "device-check.md").write_text(md)
        print(md)


def dash(value):
    return "-" if value is None else value


def markdown(report):
    lines = [f"# Device check, {report['started']}{' (small: simulation sizes)' if report['small'] else ''}", ""]
    gpu = report.get("gpu", {})
    lines.append(f"- GPU: {', '.join(g['name'] + ' (driver ' + g['driver'] + ', ' + g['memory'] + ')' for g in gpu['gpus']) if gpu.get('ok') else gpu.get('error', 'not checked')}")
    vk = report.get("vulkan", {})
    lines.append(f"- Vulkan devices (what Dawn enumerates): {', '.join(d['name'] + ' [' + d['type'] + ', Vulkan ' + d['api'] + ']' for d in vk['devices']) or 'none' if vk.get('ok') else vk.get('error', 'not checked')}")
    opened = report.get("webgpu_open") or []
    for r in opened:
        lines.append(f"- WebGPU {r['network']} {r['precision']}: {'opened and ran a tile' if r.get('ok') else 'no adapter / failed: ' + r.get('error', '')[-200:]}")
    for r in report.get("precision") or []:
        said = f"refused: {r.get('error', '')[-300:]}" if r.get("outcome") == "refused" else \
            f"runs on {r.get('active')}: " + ", ".join(f"{n['network']} {n['precision']}" for n in r.get("networks", []))
        lines.append(f"- WORKER_PRECISION={r.get('setting')} with {r.get('providers')}: {said}")
    if report.get("simulation"):
        lines.append(f"- simulated bare machine: {report['simulation']}")
    lines.append(f"- CPU cores: {report['machine']['cpus']}; total {report.get('seconds')} s")
    missing = report.get("parts", {}).get("missing")
    if missing:
        lines.append(f"- parts not carried: {', '.join(missing)}")
    lines += ["", "| kind | network | engine | input | s | output MP/s | x reference | GPU busy % | note |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in report["rows"]:
        lines.append(f"| {r['kind']} | {r['network']} | {r['engine']} | {r['input']} | {r['seconds']:.2f} | {r['mp_per_s']} | {r.get('ratio_to_reference') or '-'} | {r['gpu_busy_percent'] if r['gpu_busy_percent'] is not None else '-'} | {r['note']} |")
    if report.get("musetalk"):
        lines += ["", "MuseTalk's network stage against Wav2Lip's on the same frames (`bench musetalk`): musetalk-real-* has every graph of the real "
                  "layout and cost (UNet 822 M parameters, VAE encoder 34 M and decoder 49 M, Whisper-tiny encoder 8 M) with random weights, "
                  "musetalk-small-* the test size:", "",
                  "| network | precision | provider | batch | frames | MuseTalk frames/s | Wav2Lip frames/s | open s | build s | GB | GPU memory peak MiB | GPU busy % |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in report["musetalk"]:
            lines.append(f"| {r['network']} | {r['precision']} | {r['provider']} | {r['batch']} | {r['frames']} | {r['musetalk_fps']} | {r['wav2lip_fps']} | "
                         f"{r['open_s']} | {r['build_s']} | {r['bytes'] / 1e9:.3f} | {dash(r['gpu_memory_peak_mib'])} | {dash(r['gpu_busy_percent'])} |")
    if report["skipped"]:
        lines += ["", "Skipped:"] + [f"- {s['step']}: {s['reason']}" for s in report["skipped"]]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.environ.get("OUT") or ".device/report")
    parser.add_argument("--parts", default=".device")
    parser.add_argument("--work", default="/tmp/mw-device")
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--budget-s", type=float, default=330)
    parser.add_argument("--photo-mp", type=float, default=1)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--cpu-photo-mp", type=float, default=0.25)
    parser.add_argument("--cpu-frames", type=int, default=3)
    parser.add_argument("--steps", default="upscale,musetalk", help="comma-separated: upscale, musetalk")
    parser.add_argument("--musetalk-frames", type=int, default=48)
    parser.add_argument("--musetalk-precisions", default="fp16,fp32")
    parser.add_argument("--unpack-only", action="store_true")
    args = parser.parse_args()
    unknown = set(args.steps.split(",")) - {"upscale", "musetalk"}
    if unknown:
        parser.error(f"--steps takes upscale and musetalk, not {', '.join(sorted(unknown))}")
    check = Check(args)
    try:
        check.run()
    except Exception as error:  # the report is still written: what ran is worth having
        check.report["crash"] = f"{type(error).__name__}: {error}"
        log(f"crash: {check.report['crash']}")
    if args.unpack_only:
        print(json.dumps(check.report["parts"], indent=2))
        return
    check.finish(Path(args.out).resolve())


if __name__ == "__main__":
    main()
