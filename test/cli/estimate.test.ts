import { describe, expect, it } from 'vitest';
import { estimateLine } from '../../src/cli/estimate.js';

describe('the estimate line of upscale-image and upscale-video', () => {
  it('says the machine, the time and the network, and the faster network with the flag that picks it', () => {
    expect(estimateLine({ model: 'realesrgan-x4plus', seconds: 1747.1, hardwareClass: 'cpu', cores: 2, faster: { model: 'realesrgan-x4fast', seconds: 118 } })).toBe(
      'estimate on this machine (cpu, 2 cores): 29m07s with realesrgan-x4plus; realesrgan-x4fast would take 1m58s (--model realesrgan-x4fast)',
    );
    expect(estimateLine({ model: 'realesrgan-x4fast', seconds: 12.34, hardwareClass: 'h100', cores: 1 })).toBe('estimate on this machine (h100, 1 core): 12.3s with realesrgan-x4fast');
  });
});
