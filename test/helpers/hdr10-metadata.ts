/**
 * The HDR10 metadata the fidelity corpus writes into its PQ clips (bench/fidelity/fidelity-video-corpus.ts:
 * HDR10_MASTER_DISPLAY, HDR10_MAX_CLL), expected back on the first frame of an output. Shared by
 * the upscale's and lip-sync's fidelity tests: both pipelines must copy it.
 */
import { expect } from 'vitest';
import { firstFrameSideData } from '../../bench/fidelity/video-facts.js';

export async function expectCorpusHdr10Metadata(outputPath: string): Promise<void> {
  const side = await firstFrameSideData(outputPath);
  expect(side.find((s) => s['side_data_type'] === 'Mastering display metadata')).toMatchObject({
    red_x: '34000/50000',
    green_y: '34500/50000',
    white_point_x: '15635/50000',
    max_luminance: '10000000/10000',
    min_luminance: '1/10000',
  });
  expect(side.find((s) => s['side_data_type'] === 'Content light level metadata')).toMatchObject({
    max_content: 1000,
    max_average: 400,
  });
}
