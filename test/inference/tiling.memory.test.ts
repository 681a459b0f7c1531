/**
 * A 96 MP output must stay near the size of its 8-bit buffer: no float copy of the output (which
 * alone would be four times larger). The network is a stand-in that costs nothing, so what is
 * measured is the engine: its input batches, blend bands and the output buffer. Its own file so
 * that the process's peak memory is this test's.
 */
import { describe, expect, it } from 'vitest';
import type { Nchw, TensorOutput } from '../../src/inference/session.js';
import { type SrModel, upscaleRgb } from '../../src/inference/tiling.js';

describe('memory', () => {
  it('upscales 2448 x 2448 x4 (95.9 MP) with a peak near the output size', async () => {
    const side = 2448;
    const scale = 4;
    const image = { data: new Uint8Array(side * side * 3).fill(77), width: side, height: side, channels: 3 as const };
    let buffer = new Float32Array(0);
    const model: SrModel = {
      scale,
      async run(_input: Float32Array, dims: Nchw): Promise<TensorOutput> {
        const [n, c, h, w] = dims;
        const size = n * c * h * scale * w * scale;
        if (buffer.length !== size) buffer = new Float32Array(size).fill(200);
        return { data: buffer, dims: [n, c, h * scale, w * scale] };
      },
    };
    const before = process.resourceUsage().maxRSS * 1024;
    const result = await upscaleRgb(model, image, { tile: 512, overlap: 10, batch: 1 });
    const peak = process.resourceUsage().maxRSS * 1024;
    const outputBytes = result.data.length;
    expect(outputBytes).toBe(side * scale * side * scale * 3);
    // Output buffer + one tile's float output (50 MB) + batch input + bands: well under 1.5 x output.
    expect(peak - before).toBeLessThan(outputBytes * 1.5);
    // Every pixel was written, blended seams included (weights summing to one keep 200 exact).
    const written = Buffer.from(result.data.buffer, result.data.byteOffset, result.data.length);
    expect(written.equals(Buffer.alloc(outputBytes, 200))).toBe(true);
  });
});
