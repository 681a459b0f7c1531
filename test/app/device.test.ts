import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  describeDevice,
  deviceBudgetMb,
  deviceLine,
  parseNvidiaSmiLine,
  type DeviceDescription,
  type RunCommand,
} from '../../src/app/device.js';
import { probeHardware, srHardwareOptions } from '../../src/app/hardware.js';
import { loadConfig } from '../../src/config.js';
import {
  openSession,
  probeGraph,
  providerOptions,
  sessionOptions,
  type ProbeRunner,
} from '../../src/inference/index.js';
import { deviceSchema } from '../../src/protocol/index.js';

const MiB = 1024 * 1024;
const H100 = '3, NVIDIA H100 80GB HBM3, 81559\n';

describe('which GPU a worker runs on', () => {
  it('CUDA and TensorRT get the device index as deviceId; WebGPU and the CPU keep their names', () => {
    expect(providerOptions(['tensorrt', 'cuda', 'cpu'], 3)).toEqual([
      { name: 'tensorrt', deviceId: 3 },
      { name: 'cuda', deviceId: 3 },
      'cpu',
    ]);
    expect(providerOptions(['webgpu', 'cpu'], 2)).toEqual(['webgpu', 'cpu']);
    expect(providerOptions(['cuda'])).toEqual([{ name: 'cuda', deviceId: 0 }]);
    expect(() => providerOptions(['cuda'], -1)).toThrow(
      'Expected device index to be a non-negative integer but received -1',
    );
    expect(sessionOptions(['cuda', 'cpu'], 4, 5).executionProviders).toEqual([{ name: 'cuda', deviceId: 5 }, 'cpu']);
  });

  it('with the real ONNX Runtime: a CUDA session for GPU 1 on this CPU-only machine falls back to the CPU, naming the missing library', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'media-worker-device-'));
    try {
      const file = path.join(dir, 'probe.onnx');
      await writeFile(file, probeGraph());
      const warnings: { msg: string; obj: object }[] = [];
      const session = await openSession(file, {
        executionProviders: ['cuda'],
        deviceIndex: 1,
        logger: { warn: (obj, msg) => warnings.push({ obj, msg }) },
      });
      try {
        expect(session.provider).toBe('cpu');
        expect(session.deviceIndex).toBe(1);
        expect(JSON.stringify(warnings[0]?.obj)).toContain('libonnxruntime_providers_cuda.so');
      } finally {
        await session.release();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the start-up probe runs on the configured GPU, and the tile budget follows that GPU's memory when none is set", async () => {
    const seen: (number | undefined)[] = [];
    const cudaWorks: ProbeRunner = async (_providers, deviceIndex) => {
      seen.push(deviceIndex);
    };
    const fakeSmi = async (provider: DeviceDescription['provider'], index: number): Promise<DeviceDescription> =>
      describeDevice(provider, index, async () => H100);
    const hardware = await probeHardware(
      loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda', MEDIA_WORKER_DEVICE_INDEX: '3' }),
      cudaWorks,
      fakeSmi,
    );
    expect(seen).toEqual([3]);
    expect(hardware.device).toEqual({
      kind: 'gpu',
      provider: 'cuda',
      index: 3,
      name: 'NVIDIA H100 80GB HBM3',
      memoryMb: 81559,
    });
    expect(hardware.config.deviceMemoryMb).toBe(20389);
    expect(srHardwareOptions(hardware.config).tileMemoryBytes).toBe(20389 * MiB);
    // A configured budget wins; the CPU's budget is its own setting.
    const set = await probeHardware(
      loadConfig({ MEDIA_WORKER_EXECUTION_PROVIDERS: 'cuda', MEDIA_WORKER_DEVICE_MEMORY_MB: '8192' }),
      cudaWorks,
      fakeSmi,
    );
    expect(set.config.deviceMemoryMb).toBe(8192);
  });
});

describe('describing the device', () => {
  it("reads nvidia-smi's CSV line, and nothing else", () => {
    expect(parseNvidiaSmiLine('3, NVIDIA H100 80GB HBM3, 81559')).toEqual({
      index: 3,
      name: 'NVIDIA H100 80GB HBM3',
      memoryMb: 81559,
    });
    expect(parseNvidiaSmiLine('0, Tesla T4, Special, 15360')).toEqual({
      index: 0,
      name: 'Tesla T4, Special',
      memoryMb: 15360,
    });
    for (const bad of ['', 'No devices were found', '0, , 15360', 'x, T4, 15360', '0, T4, [N/A]', '-1, T4, 100'])
      expect(parseNvidiaSmiLine(bad), bad).toBeUndefined();
  });

  it('a GPU by index, name and memory; says why when nvidia-smi cannot; the CPU says it is the CPU', async () => {
    const calls: string[][] = [];
    const smi: RunCommand = async (file, args) => {
      calls.push([file, ...args]);
      return H100;
    };
    expect(await describeDevice('tensorrt', 3, smi)).toEqual({
      kind: 'gpu',
      provider: 'tensorrt',
      index: 3,
      name: 'NVIDIA H100 80GB HBM3',
      memoryMb: 81559,
    });
    expect(calls[0]).toEqual([
      'nvidia-smi',
      '--query-gpu=index,name,memory.total',
      '--format=csv,noheader,nounits',
      '-i',
      '3',
    ]);

    const missing = await describeDevice('cuda', 1, async () => Promise.reject(new Error('spawn nvidia-smi ENOENT')));
    expect(missing).toEqual({
      kind: 'gpu',
      provider: 'cuda',
      index: 1,
      name: null,
      memoryMb: null,
      note: 'nvidia-smi: spawn nvidia-smi ENOENT',
    });
    expect((await describeDevice('cuda', 2, async () => H100)).note).toContain('did not describe GPU 2');

    const cpu = await describeDevice('cpu', 1);
    expect(cpu).toMatchObject({ kind: 'cpu', provider: 'cpu', index: null, memoryMb: Math.round(os.totalmem() / MiB) });
    expect(cpu.note).toContain('no GPU: running on the CPU');
    expect(cpu.note).toContain('MEDIA_WORKER_DEVICE_INDEX=1');
    const webgpu = await describeDevice('webgpu', 2);
    expect(webgpu).toMatchObject({ kind: 'gpu', index: null });
    expect(webgpu.note).toContain("Dawn's default adapter");
    // Every description is what the capabilities schema accepts.
    for (const d of [missing, cpu, webgpu]) expect(deviceSchema.parse(d)).toEqual(d);
    expect(deviceLine(missing)).toBe('GPU 1 (unknown) on cuda: nvidia-smi: spawn nvidia-smi ENOENT');
  });

  it("the GPU budget: the setting when given, else a quarter of the GPU, else the manifests' tiles", () => {
    const gpu: DeviceDescription = { kind: 'gpu', provider: 'cuda', index: 0, name: 'A', memoryMb: 24576 };
    expect(deviceBudgetMb(0, gpu)).toBe(6144);
    expect(deviceBudgetMb(1000, gpu)).toBe(1000);
    expect(deviceBudgetMb(0, { ...gpu, memoryMb: null })).toBe(0);
    expect(deviceBudgetMb(0, { ...gpu, kind: 'cpu', provider: 'cpu' })).toBe(0);
  });
});
