/**
 * The engines benchmark (bench/inference/engines.ts): its pure parts (CPU flags, rounds, agreement,
 * variants, the table's ratios, pip's arguments), its usage, and, where the bench's Python
 * environment exists (.cache/bench-python, made by the first `media-worker bench engines`), that
 * engines_reference.py inverts the up-sampling fold exactly and that its PyTorch reference computes
 * what ONNX Runtime computes on our real graphs (every fold of the converter undone). No timing is
 * asserted.
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  assignVariants,
  cpuFlags,
  engineRows,
  pipInstallArgs,
  psnrClamped,
  roundOrder,
  TABLE_HEADER,
  variantLabel,
} from '../../bench/inference/engines-table.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

const SCRIPT = path.join(PACKAGE_ROOT, 'dist', 'bench', 'inference', 'engines.js');
const REFERENCE = path.join(PACKAGE_ROOT, 'bench', 'inference', 'engines_reference.py');
const PYTHON = path.join(PACKAGE_ROOT, '.cache', 'bench-python', 'venv', 'bin', 'python');

function node(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: PACKAGE_ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
    });
  });
}

describe('the pure parts', () => {
  it('reads the model and the relevant vector flags of /proc/cpuinfo', () => {
    const cpuinfo =
      'processor\t: 0\nmodel name\t: AMD EPYC 9R14: 96-Core\nflags\t\t: fpu sse avx2 fma avx512f avx512_vnni avx512_bf16 amx_tile\n\nprocessor\t: 1\n';
    const cpu = cpuFlags(cpuinfo);
    expect(cpu.model).toBe('AMD EPYC 9R14: 96-Core');
    expect(cpu.present).toEqual(['avx2', 'fma', 'avx512f', 'avx512_vnni', 'avx512_bf16', 'amx_tile']);
    expect(cpu.absent).toContain('avx_vnni');
    expect(cpu.absent).not.toContain('avx2');
    expect(cpuFlags('')).toEqual({
      model: 'unknown',
      present: [],
      absent: expect.arrayContaining(['avx2']) as unknown as string[],
    });
  });

  it('rotates the engines so that each goes first in turn', () => {
    expect([0, 1, 2, 3].map((r) => roundOrder(['a', 'b', 'c'], r).join(''))).toEqual(['abc', 'bca', 'cab', 'abc']);
    expect(roundOrder([], 3)).toEqual([]);
  });

  it('PSNR clamps to 0..255, is infinite for equal outputs and refuses different sizes', () => {
    const a = Float32Array.of(0, 100, 255, 300);
    expect(psnrClamped(a, Float32Array.of(-5, 100, 255, 255))).toBe(Number.POSITIVE_INFINITY);
    // One value off by 1 of four: MSE 0.25.
    expect(psnrClamped(a, Float32Array.of(0, 101, 255, 255))).toBeCloseTo(10 * Math.log10((255 * 255) / 0.25), 10);
    expect(() => psnrClamped(a, Float32Array.of(0))).toThrow(/equal size/);
  });

  it('gives each --variant file to the network its name names, or to the only network', () => {
    const both = ['realesrgan-x4plus', 'realesrgan-x4fast'];
    const got = assignVariants(['a/x4fast-int8.onnx', 'b/realesrgan-x4plus-int8.onnx'], both);
    expect(Object.fromEntries(got)).toEqual({
      'realesrgan-x4plus': ['b/realesrgan-x4plus-int8.onnx'],
      'realesrgan-x4fast': ['a/x4fast-int8.onnx'],
    });
    expect(Object.fromEntries(assignVariants(['q.onnx'], ['realesrgan-x4fast']))).toEqual({
      'realesrgan-x4fast': ['q.onnx'],
    });
    expect(() => assignVariants(['q.onnx'], both)).toThrow(/--variant q.onnx/);
    expect(variantLabel('/x/x4fast int8+io32.onnx')).toBe('x4fast-int8-io32');
  });

  it('builds rows of medians, mins and speed-ups against PyTorch fp32 and ours fp32', () => {
    const rows = engineRows(
      'x4plus',
      '64x64',
      [
        { engine: 'ours fp32', runs: [1, 3, 2], psnr: Number.POSITIVE_INFINITY },
        { engine: 'ours int8', runs: [0.5, 0.25, 2], psnr: 38.04 },
        { engine: 'PyTorch fp32', runs: [4, 6, 5, 100], psnr: 75.44 },
        { engine: 'onnxruntime Python fp32', runs: [2], psnr: Number.POSITIVE_INFINITY },
        { engine: 'ours bf16', note: 'not prepared' },
      ],
      'PyTorch fp32',
      'ours fp32',
    );
    expect(rows.every((r) => r.length === TABLE_HEADER.length)).toBe(true);
    // ours fp32: median 2, min 1; PyTorch median 5.5, min 4.
    expect(rows[0]).toEqual([
      'x4plus',
      '64x64',
      'ours fp32',
      '3',
      '2.000',
      '1.000',
      '2.75',
      '4.00',
      '1.00',
      '1.00',
      'reference',
    ]);
    expect(rows[1]).toEqual([
      'x4plus',
      '64x64',
      'ours int8',
      '3',
      '0.500',
      '0.250',
      '11.00',
      '16.00',
      '4.00',
      '4.00',
      '38.0',
    ]);
    expect(rows[2]!.slice(4)).toEqual(['5.500', '4.000', '1.00', '1.00', '0.36', '0.25', '75.4']);
    expect(rows[3]!.at(-1)).toBe('identical');
    expect(rows[4]).toEqual(['x4plus', '64x64', 'ours bf16', '0', 'not prepared', '', '', '', '', '', '']);
    // Without a PyTorch row the ratios against it are left empty, not made up.
    const alone = engineRows('x4fast', '8x8', [{ engine: 'ours fp32', runs: [1] }], 'PyTorch fp32', 'ours fp32');
    expect(alone[0]!.slice(6, 8)).toEqual(['', '']);
  });

  it("installs from the local indexes that exist, torch pinned to a CPU wheel where one is, or pip's defaults", () => {
    const local = pipInstallArgs({
      indexes: ['/i/a', '/i/b'],
      wheels: [
        'numpy-2.0.whl',
        'torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl',
        'torch-2.12.0+cpu-cp311-x.whl',
      ],
      wheelsDir: '/w',
    });
    expect(local).toEqual([
      'install',
      '--index-url',
      'file:///i/a',
      '--extra-index-url',
      'file:///i/b',
      'numpy',
      'onnx',
      'onnxruntime',
      '--find-links',
      '/w',
      'torch==2.13.0+cpu',
    ]);
    expect(pipInstallArgs({ indexes: [], wheels: [], wheelsDir: '/w' })).toEqual([
      'install',
      'numpy',
      'onnx',
      'onnxruntime',
      'torch',
    ]);
    expect(
      pipInstallArgs(
        { indexes: ['/i/a'], wheels: [], wheelsDir: '/w' },
        ' --index-url https://example.invalid/simple ',
      ),
    ).toEqual(['install', '--index-url', 'https://example.invalid/simple', 'numpy', 'onnx', 'onnxruntime', 'torch']);
  });
});

describe('the command line', () => {
  it('--help prints the usage with its flags; a bad flag is refused in one line', async () => {
    const help = await node([SCRIPT, '--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout.startsWith('usage: media-worker bench engines [flags]')).toBe(true);
    for (const flag of [
      '--size PX[,PX]',
      '--variant FILE[,FILE]',
      '--python PATH',
      '--ours-only',
      '--threads N',
      '--repeat N',
    ])
      expect(help.stdout).toContain(flag);
    const bad = await node([SCRIPT, '--rounds', '3']);
    expect(bad.code).toBe(2);
    expect(bad.stderr.split('\n')[0]).toBe("engines: Unknown option '--rounds'");
  });
});

const noPython =
  existsSync(PYTHON) &&
  spawnSync(PYTHON, ['-c', 'import numpy, onnx, onnxruntime, torch'], { stdio: 'ignore' }).status === 0
    ? undefined
    : 'no bench Python environment with torch (.cache/bench-python; `media-worker bench engines` makes it)';

describe.skipIf(noPython !== undefined)(
  `engines_reference.py${noPython === undefined ? '' : ` (skipped: ${noPython})`}`,
  () => {
    let work: string;
    beforeAll(async () => {
      work = await mkdtemp(path.join(tmpdir(), 'engines-test-'));
    });
    afterAll(async () => {
      await rm(work, { recursive: true, force: true });
    });

    /**
     * A 3x3 'same' convolution of the nearest x2 up-sampling as 4 phase kernels at input resolution
     * (DCR channel order (a*2 + b)*Cout + c), the rewrite of src/inference/convert/upsample-conv.ts
     * written out here for one case: output (2Y + a) reads input row Y + floor((a + t - 1) / 2), so a
     * phase kernel's tap at offset r sums the original taps t landing there (offsets -1..1).
     */
    function foldX2(
      kernel: Float32Array,
      bias: Float32Array,
      cout: number,
      cin: number,
    ): { kernel: Float32Array; bias: Float32Array; shape: number[] } {
      const out = new Float64Array(4 * cout * cin * 9);
      for (let a = 0; a < 2; a += 1)
        for (let b = 0; b < 2; b += 1)
          for (let c = 0; c < cout; c += 1)
            for (let i = 0; i < cin; i += 1)
              for (let t = 0; t < 3; t += 1)
                for (let u = 0; u < 3; u += 1) {
                  const r = Math.floor((a + t - 1) / 2) + 1;
                  const q = Math.floor((b + u - 1) / 2) + 1;
                  const at = ((((a * 2 + b) * cout + c) * cin + i) * 3 + r) * 3 + q;
                  out[at] = out[at]! + kernel[((c * cin + i) * 3 + t) * 3 + u]!;
                }
      const phases = new Float32Array(4 * cout);
      for (let p = 0; p < 4; p += 1) phases.set(bias, p * cout);
      return { kernel: Float32Array.from(out), bias: phases, shape: [4 * cout, cin, 3, 3] };
    }

    it('recovers the 3x3 taps and bias from a nearest-x2 phase convolution', async () => {
      const [cout, cin] = [5, 4];
      let s = 7;
      const random = (): number => {
        s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
        return s / 2 ** 32 - 0.5;
      };
      const kernel = Float32Array.from({ length: cout * cin * 9 }, random);
      const bias = Float32Array.from({ length: cout }, random);
      const folded = foldX2(kernel, bias, cout, cin);
      await writeFile(path.join(work, 'w.f32'), folded.kernel);
      await writeFile(path.join(work, 'b.f32'), folded.bias);
      const code = [
        'import sys, json, numpy as np',
        `sys.path.insert(0, ${JSON.stringify(path.dirname(REFERENCE))})`,
        'import engines_reference as er',
        `w = np.fromfile(${JSON.stringify(path.join(work, 'w.f32'))}, dtype=np.float32).reshape(${folded.shape.join(',')})`,
        `b = np.fromfile(${JSON.stringify(path.join(work, 'b.f32'))}, dtype=np.float32)`,
        'k, bias, err = er.unfold_phase_conv(w, b)',
        `k.astype(np.float32).tofile(${JSON.stringify(path.join(work, 'k.f32'))})`,
        `bias.astype(np.float32).tofile(${JSON.stringify(path.join(work, 'bias.f32'))})`,
        'print(json.dumps({"shape": list(k.shape), "err": err}))',
      ].join('\n');
      const run = spawnSync(PYTHON, ['-c', code], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { shape: number[]; err: number };
      expect(out.shape).toEqual([cout, cin, 3, 3]);
      expect(out.err).toBeLessThan(1e-6);
      const taps = new Float32Array((await readFile(path.join(work, 'k.f32'))).buffer.slice(0));
      const gotBias = new Float32Array((await readFile(path.join(work, 'bias.f32'))).buffer.slice(0));
      let worst = 0;
      for (let i = 0; i < kernel.length; i += 1) worst = Math.max(worst, Math.abs(taps[i]! - kernel[i]!));
      expect(worst).toBeLessThan(1e-6);
      expect([...gotBias]).toEqual([...bias]);
    });

    const models = ['realesrgan-x4fast', 'realesrgan-x4plus'].filter((m) =>
      existsSync(path.join(PACKAGE_ROOT, 'models', `${m}.onnx`)),
    );
    it.skipIf(models.length === 0)(
      'its basicsr networks compute what ONNX Runtime computes on our graphs (PSNR > 60 dB)',
      () => {
        for (const model of models) {
          const run = spawnSync(
            PYTHON,
            [
              REFERENCE,
              path.join(PACKAGE_ROOT, 'models', `${model}.onnx`),
              '--size',
              '8',
              '--rounds',
              '0',
              '--threads',
              '1',
            ],
            { encoding: 'utf8' },
          );
          expect(run.status, run.stderr).toBe(0);
          const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
            ok: boolean;
            arch: string;
            psnr_pytorch_vs_ort: number | null;
            output: string;
          };
          expect(result.ok).toBe(true);
          expect(result.arch).toBe(model.endsWith('x4plus') ? 'RRDBNet' : 'SRVGGNetCompact');
          expect(result.output).toBe('32x32');
          expect(result.psnr_pytorch_vs_ort ?? Number.POSITIVE_INFINITY).toBeGreaterThan(60);
        }
      },
    );
  },
);
