/**
 * The device check cannot rot: `device:pack` (uncompressed, to save time) and the check itself run
 * end to end in the simulated bare machine (scripts/device/simulate.sh: no node on PATH, empty HOME,
 * no network where `unshare -n` is permitted, none of the host's Vulkan drivers), on the simulation's small inputs. No GPU here, so
 * the GPU steps must say there is no adapter, and everything else must really run: MuseTalk's step
 * too, at the test size with its weights outside the graphs, on the CPU.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';

interface Report {
  simulation: string | null;
  node_on_path_before: string | null;
  parts: { present: string[]; problems: string[]; plan: { items: { name: string; part: string }[] } };
  gpu: { ok: boolean; error?: string };
  vulkan: { ok: boolean; error?: string; devices?: unknown[] };
  webgpu_open: { network: string; precision: string; ok: boolean; error?: string }[];
  precision: { providers: string; outcome: string; active?: string; error?: string }[];
  steps: { step: string; status: number | null; stdout_tail: string }[];
  rows: { kind: string; engine: string; seconds: number; output_mp: number; mp_per_s: number }[];
  skipped: { step: string; reason: string }[];
  musetalk: {
    network: string;
    precision: string;
    provider: string;
    batch: number;
    frames: number;
    musetalk_fps: number;
    wav2lip_fps: number;
    wav2lip_provider: string;
    bytes: number;
    unet_parameters: number;
    parameters: Record<string, number>;
    weights_outside: string[];
    gpu_memory_peak_mib: number | null;
  }[];
}

let dir = '';
let report: Report;
let markdown = '';
let simulated = { status: -1 as number | null, stderr: '' };

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'device-sim-test-'));
  const parts = path.join(dir, 'parts');
  const pack = spawnSync(
    process.execPath,
    [
      path.join(PACKAGE_ROOT, 'dist', 'scripts', 'device', 'pack.js'),
      '--out',
      parts,
      '--compress',
      'none',
      '--part-mib',
      '4096',
    ],
    { cwd: PACKAGE_ROOT, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 },
  );
  if (pack.status !== 0) throw new Error(`device:pack failed: ${pack.stderr.slice(-2000)}`);
  const out = path.join(dir, 'report');
  const sim = spawnSync('bash', [path.join(PACKAGE_ROOT, 'scripts', 'device', 'simulate.sh')], {
    cwd: PACKAGE_ROOT,
    encoding: 'utf8',
    env: { ...process.env, DEVICE_PARTS: parts, DEVICE_SIM_OUT: out },
    maxBuffer: 16 * 1024 * 1024,
  });
  simulated = { status: sim.status, stderr: sim.stderr };
  report = JSON.parse(await readFile(path.join(out, 'device-check.json'), 'utf8')) as Report;
  markdown = await readFile(path.join(out, 'device-check.md'), 'utf8');
  // 40 s on a quiet 2-core machine (pack 20 s, check 20 s); a cap for a machine under heavy load, not a measurement.
}, 600_000);

afterAll(async () => {
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

describe('the device check in a simulated bare machine', () => {
  it('ran with no node on PATH and every carried part unpacked', () => {
    expect(simulated.status, simulated.stderr.slice(-2000)).toBe(0);
    expect(report.node_on_path_before).toBeNull();
    expect(report.simulation).toMatch(/no node on PATH; empty HOME/);
    expect(report.parts.problems).toEqual([]);
    expect(report.parts.present.sort()).toEqual(report.parts.plan.items.map((i) => i.name).sort());
    expect(report.parts.present).toEqual(
      expect.arrayContaining(['node', 'app', 'onnxruntime', 'sharp', 'ffmpeg', 'upscayl', 'ncnn-x4plus']),
    );
  });

  it('made the ONNX files from the carried ncnn weights, byte for byte the manifests', () => {
    const convert = report.steps.find((s) => s.step === 'convert ncnn to ONNX');
    expect(convert?.status).toBe(0);
    expect(convert?.stdout_tail).toMatch(/realesrgan-x4fast\.onnx .* matches manifest/);
  });

  it('says cleanly that there is no GPU and no adapter', () => {
    // Whatever Vulkan drivers this machine has (Mesa's CPU lavapipe comes with ffmpeg on Debian), the
    // simulated bare machine sees none (scripts/device/simulate.sh).
    expect(report.simulation).toMatch(/no adapter \(the host's Vulkan drivers hidden\)/);
    expect(report.vulkan.ok).toBe(false);
    expect(report.gpu.ok).toBe(false);
    expect(report.gpu.error).toMatch(/nvidia-smi is not on this machine/);
    expect(report.webgpu_open.length).toBeGreaterThanOrEqual(2);
    for (const open of report.webgpu_open) {
      expect(open.ok).toBe(false);
      expect(open.error).toMatch(/adapter/i);
    }
    const upscayl = report.skipped.filter((s) => s.step.startsWith('upscayl-bin'));
    expect(upscayl.length).toBeGreaterThan(0);
    for (const s of upscayl) expect(s.reason).toMatch(/no adapter/);
    const torch = report.skipped.filter((s) => s.step.startsWith('torch'));
    expect(torch.length).toBeGreaterThan(0);
    for (const s of torch) expect(s.reason).toMatch(/missing Python package|not installed|no CUDA/);
  });

  it('asked for WORKER_PRECISION=int8 with each GPU provider: none here, so each start ran the int8 graphs on the CPU', () => {
    expect(report.precision.map((r) => r.providers)).toEqual(['tensorrt,cuda', 'cuda', 'webgpu']);
    for (const r of report.precision) expect([r.outcome, r.active]).toEqual(['runs', 'cpu']);
    expect(markdown).toMatch(
      /- WORKER_PRECISION=int8 with cuda: runs on cpu: realesrgan-x4plus fp32, realesrgan-x4fast int8/,
    );
  });

  it('upscaled the photo on the CPU provider, file to file, and wrote both reports', () => {
    const cpu = report.rows.find((r) => r.kind === 'image' && r.engine.startsWith('ours, cpu'));
    expect(cpu?.seconds).toBeGreaterThan(0);
    expect(cpu?.output_mp).toBeGreaterThan(0);
    expect(markdown).toMatch(/\| image \| realesrgan-x4fast \| ours, cpu fp32 \|/);
    expect(markdown).toMatch(/Skipped:/);
  });

  it("timed MuseTalk's network stage against Wav2Lip's at batch 8, on builds made there in fp16 and fp32 with their weights outside", () => {
    expect(
      report.musetalk.map((r) => [r.network, r.precision, r.provider, r.wav2lip_provider, r.batch, r.frames]),
    ).toEqual([
      ['musetalk-small-fp16', 'fp16', 'cpu', 'cpu', 8, 8],
      ['musetalk-small-fp32', 'fp32', 'cpu', 'cpu', 8, 8],
    ]);
    for (const r of report.musetalk) {
      expect(r.musetalk_fps).toBeGreaterThan(0);
      expect(r.wav2lip_fps).toBeGreaterThan(0);
      expect(r.unet_parameters).toBeGreaterThan(100_000);
      // The VAE and the encoder carry cost trunks too (tiny at the test size), their weights outside as well.
      expect(r.parameters.vae_decoder).toBeGreaterThan(5_000);
      expect(r.parameters.whisper_encoder).toBeGreaterThan(r.parameters.positional_encoding!);
      expect(r.weights_outside).toEqual([
        'whisper_encoder',
        'positional_encoding',
        'vae_encoder',
        'unet',
        'vae_decoder',
      ]);
      expect(r.gpu_memory_peak_mib).toBeNull();
    }
    // fp16 stores half the bytes of weights.
    expect(report.musetalk[0]!.bytes).toBeLessThan(0.6 * report.musetalk[1]!.bytes);
    expect(markdown).toMatch(/\| musetalk-small-fp16 \| fp16 \| cpu \| 8 \| 8 \| [\d.]+ \| [\d.]+ \|/);
  });
});
