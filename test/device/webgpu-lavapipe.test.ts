/**
 * The WebGPU provider without a GPU (issue 32 item 3): Dawn refuses Debian 12's Mesa 22.3 lavapipe
 * ("No supported adapters") but accepts the Mesa 25 lavapipe of bookworm-backports, which
 * scripts/device/get-mesa.sh unpacks into a cache folder. `upscale-image` then runs x4fast through
 * ONNX Runtime's WebGPU provider (Dawn over Vulkan on the CPU) with no CPU fallback allowed, and its
 * output must match the CPU provider's to 40 dB. Skipped, saying why, where Debian's mirror cannot
 * be reached.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';

const mesa = spawnSync('bash', [path.join(PACKAGE_ROOT, 'scripts', 'device', 'get-mesa.sh')], { encoding: 'utf8' });
const mesaDir = mesa.status === 0 ? mesa.stdout.trim() : undefined;
if (mesaDir === undefined) console.warn(`webgpu-lavapipe: skipped: ${mesa.stderr.trim()}`);

const dir = await mkdtemp(path.join(tmpdir(), 'webgpu-lavapipe-'));
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function upscale(input: string, output: string, provider: 'webgpu' | 'cpu'): { status: number | null; stderr: string } {
  const env = {
    ...process.env,
    MEDIA_WORKER_EXECUTION_PROVIDERS: provider,
    MEDIA_WORKER_CPU_FALLBACK: 'false',
    ...(mesaDir === undefined
      ? {}
      : { VK_DRIVER_FILES: path.join(mesaDir, 'lvp_icd.json'), LD_LIBRARY_PATH: path.join(mesaDir, 'lib') }),
  };
  const r = spawnSync(
    process.execPath,
    [
      path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'),
      'upscale-image',
      input,
      '-f',
      '4',
      '-m',
      'realesrgan-x4fast',
      '-o',
      output,
    ],
    { env, encoding: 'utf8' },
  );
  return { status: r.status, stderr: r.stderr };
}

async function rgb(file: string): Promise<Buffer> {
  return sharp(file).removeAlpha().raw().toBuffer();
}

describe.skipIf(mesaDir === undefined)('the WebGPU provider on Mesa 25 lavapipe', () => {
  it('upscales a small photo with x4fast on WebGPU, matching the CPU provider to 40 dB', async () => {
    const input = path.join(dir, 'in.png');
    await sharp(path.join(PACKAGE_ROOT, 'test', 'fixtures', 'photos', 'astronaut.png'))
      .extract({ left: 200, top: 60, width: 32, height: 32 })
      .png()
      .toFile(input);
    const gpu = upscale(input, path.join(dir, 'webgpu.png'), 'webgpu');
    expect(gpu.status, gpu.stderr.slice(-1500)).toBe(0);
    // No silent fallback: the probe passed on WebGPU and no session fell back to the CPU.
    expect(gpu.stderr).not.toMatch(/falling back/);
    const cpu = upscale(input, path.join(dir, 'cpu.png'), 'cpu');
    expect(cpu.status, cpu.stderr.slice(-1500)).toBe(0);
    const [a, b] = await Promise.all([rgb(path.join(dir, 'webgpu.png')), rgb(path.join(dir, 'cpu.png'))]);
    expect(a.length).toBe(128 * 128 * 3);
    expect(b.length).toBe(a.length);
    let squared = 0;
    for (let i = 0; i < a.length; i += 1) squared += ((a[i] ?? 0) - (b[i] ?? 0)) ** 2;
    const psnr = squared === 0 ? Infinity : 10 * Math.log10((255 * 255) / (squared / a.length));
    console.info(`webgpu-lavapipe: WebGPU vs CPU provider, x4fast 32x32 -> 128x128: PSNR ${psnr.toFixed(1)} dB`);
    expect(psnr).toBeGreaterThanOrEqual(40);
  }, 120_000);
});

describe('the WebGPU provider on this machine without a newer Mesa', () => {
  it("fails the probe with Dawn's own words instead of running on the CPU", () => {
    // Whatever Vulkan driver the system has (none, or Debian 12's lavapipe), Dawn finds no adapter.
    const r = spawnSync(
      process.execPath,
      [
        path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'),
        'upscale-image',
        path.join(PACKAGE_ROOT, 'test', 'fixtures', 'photos', 'astronaut.png'),
        '-f',
        '4',
        '-m',
        'realesrgan-x4fast',
        '-o',
        path.join(dir, 'never.png'),
      ],
      {
        env: {
          ...process.env,
          MEDIA_WORKER_EXECUTION_PROVIDERS: 'webgpu',
          MEDIA_WORKER_CPU_FALLBACK: 'false',
          VK_DRIVER_FILES: path.join(dir, 'no-such-driver.json'),
        },
        encoding: 'utf8',
      },
    );
    expect(r.status).not.toBe(0);
    expect(`${r.stdout}${r.stderr}`).toMatch(/adapter/i);
  }, 60_000);
});
