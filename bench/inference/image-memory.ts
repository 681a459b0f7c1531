/**
 * Peak memory of the largest image job the spec allows: a 96 MP output (4898x4898 x2 = 95.96 MP)
 * through the real image pipeline (decode, tiled network, 8-bit output, encode), measured as the
 * peak resident set of a child process that does nothing else (ONNX Runtime's threads included).
 * Prints the peak next to the size of the 8-bit output, the floor any pipeline needs.
 *
 *   media-worker bench image-memory --help
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { SessionCache, createSrModelLoader } from '../../src/inference/index.js';
import type { UpscaleFactor } from '../../src/jobs/index.js';
import { probeImage } from '../../src/media/index.js';
import { DEFAULT_SAMPLE_IMAGE } from '../../src/paths.js';
import { upscaleImageFile } from '../../src/kinds/image-upscale/pipeline/index.js';
import { TABLES } from '../blocks.js';
import { benchRegistry, describeMachine, machineInfo } from '../common.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'image-memory',
  options: {
    side: { type: 'string', arg: 'PX', help: 'input side of the square test image', default: '4898' },
    factor: { type: 'string', arg: '1|2|4', help: 'the upscale factor', default: '2' },
    child: { type: 'boolean', help: 'internal: the measured child process', hidden: true },
    input: { type: 'string', arg: 'FILE', help: "internal: the child's input", hidden: true },
    output: { type: 'string', arg: 'FILE', help: "internal: the child's output", hidden: true },
  },
  common: { model: { help: 'the network (default: the image default of MEDIA_WORKER_SR_MODELS)' } },
});
const values = cli.values;

const factor = values.factor as UpscaleFactor;

if (values.child) {
  // Child: one upscale, then report peak RSS (kilobytes) on stdout.
  const input = values.input ?? '';
  const output = values.output ?? '';
  const sessions = new SessionCache({ executionProviders: ['cpu'] });
  const started = performance.now();
  await upscaleImageFile(
    {
      inputPath: input,
      outputPath: output,
      factor,
      info: await probeImage(input),
      ...(values.model === undefined ? {} : { modelName: values.model }),
    },
    createSrModelLoader({ sessions, ...benchRegistry() }),
  );
  const seconds = (performance.now() - started) / 1000;
  await sessions.release();
  process.stdout.write(JSON.stringify({ maxRssKb: process.resourceUsage().maxRSS, seconds }) + '\n');
} else {
  const target = await docsTarget('image-memory', values);
  const machine = describeMachine(machineInfo());
  const side = Number(values.side);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-image-memory-'));
  try {
    const input = path.join(dir, 'input.png');
    const output = path.join(dir, 'output.png');
    await sharp(DEFAULT_SAMPLE_IMAGE)
      .resize(side, side, { kernel: 'lanczos3' })
      .png({ compressionLevel: 1 })
      .toFile(input);
    const self = fileURLToPath(import.meta.url);
    const args = [
      self,
      '--factor',
      factor,
      '--child',
      '--input',
      input,
      '--output',
      output,
      ...(values.model === undefined ? [] : ['--model', values.model]),
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`child exited with ${code}`);
    const { maxRssKb, seconds } = JSON.parse(out) as { maxRssKb: number; seconds: number };
    const outSide = side * Number(factor);
    const outputMb = (outSide * outSide * 3) / 2 ** 20;
    const peakMb = maxRssKb / 1024;
    console.log(
      `input ${side}x${side}, output ${outSide}x${outSide} = ${((outSide * outSide) / 1e6).toFixed(2)} MP, factor ${factor}`,
    );
    console.log(`wall ${seconds.toFixed(1)} s, ${((outSide * outSide) / 1e6 / seconds).toFixed(2)} output MP/s`);
    console.log(
      `peak RSS ${peakMb.toFixed(0)} MiB; 8-bit RGB output alone ${outputMb.toFixed(0)} MiB; ratio ${(peakMb / outputMb).toFixed(2)}`,
    );
    console.log(`machine: ${machine}`);
    const outMp = (outSide * outSide) / 1e6;
    const row = [
      values.model ?? 'the image default',
      `x${factor}`,
      `${side}x${side}`,
      `${outSide}x${outSide}`,
      outMp.toFixed(2),
      seconds.toFixed(1),
      (outMp / seconds).toFixed(2),
      peakMb.toFixed(0),
      outputMb.toFixed(0),
      (peakMb / outputMb).toFixed(2),
    ];
    console.log(`\n${markdownTable(TABLES.imageMemory.header, [row])}`);
    const caption = 'Peak resident set of a child process running the whole file-to-file pipeline (PNG in, PNG out):';
    await writeDocsBlock(
      target,
      'image-memory',
      [{ caption, header: TABLES.imageMemory.header, rows: [row] }],
      machine,
    );
    await cli.done({ tables: [{ caption, header: TABLES.imageMemory.header, rows: [row] }] });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
