/**
 * `npm run bench:fidelity`: the fidelity corpus (images and video) through the real pipelines, one
 * line per case: colour difference back at the input's size in the input's colour space (mean
 * CIEDE2000), picture-to-sound offset, bit depth and streams in and out (bench/fidelity/fidelity-row.ts).
 * `--images` or `--video` runs one half. The timing of the 8-bit path before and after, and of HDR
 * against SDR, is `node dist/bench/fidelity/fidelity-video.js --no-rows --timing --before OTHER_DIST`.
 */
import { describeMachine, formatTable, machineInfo } from '../common.js';
import { imageFidelityRows } from './fidelity-images.js';
import type { FidelityRow } from './fidelity-row.js';
import { benchCli } from '../harness.js';
import { videoFidelityRows } from './fidelity-video.js';

const HEADER = ['case', 'ΔE00', 'A/V ms', 'bits', 'streams in', 'streams out', 'notes'];

function cells(row: FidelityRow): string[] {
  return [
    row.case,
    row.deltaE2000 === undefined ? '-' : row.deltaE2000.toFixed(2),
    row.avOffsetMs === undefined ? '-' : row.avOffsetMs.toFixed(1),
    `${row.bitDepthIn}->${row.bitDepthOut}`,
    row.streamsIn.join(' '),
    row.streamsOut.join(' '),
    row.notes ?? '',
  ];
}

async function main(): Promise<void> {
  const cli = benchCli({
    name: 'fidelity',
    options: {
      images: { type: 'boolean', help: 'only the image half of the corpus' },
      video: { type: 'boolean', help: 'only the video half of the corpus' },
    },
  });
  const { values } = cli;
  const both = !values.images && !values.video;
  const rows: FidelityRow[] = [];
  if (both || values.images) rows.push(...(await imageFidelityRows()));
  if (both || values.video) rows.push(...(await videoFidelityRows()));
  console.log(describeMachine(machineInfo()));
  console.log(formatTable(HEADER, rows.map(cells)));
  await cli.done({ tables: [{ header: HEADER, rows: rows.map(cells) }] });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
