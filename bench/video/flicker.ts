/**
 * Temporal stability of video upscaling on a real clip: the mean frame-to-frame luma change of each
 * network's output over that of a bicubic upscale of the same frames (1.0: no more flicker than
 * bicubic; a network that invents texture differently on every frame scores above). The clip is a
 * stretch of opencv-doc's Megamind.avi, downscaled x4 first, then upscaled x4 by the real video
 * pipeline (decoder, tiles, encoder at CRF 18); outputs are decoded back and compared at full size.
 *
 *   media-worker bench flicker --help
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SessionCache, createSrModelLoader } from '../../src/inference/index.js';
import { resolveFfmpeg, probeMedia, runProcess } from '../../src/media/index.js';
import { upscaleVideoFile } from '../../src/kinds/video-upscale/pipeline/index.js';
import { benchRegistry, describeMachine, formatTable, machineInfo, splitList } from '../common.js';
import { TABLES } from '../blocks.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';
import { lumaBt601, meanFrameChange, type Plane } from '../metrics.js';

const cli = benchCli({
  name: 'flicker',
  options: {
    start: { type: 'string', arg: 'S', help: 'where the stretch of the clip starts', default: '2' },
    seconds: { type: 'string', arg: 'S', help: 'its length', default: '2' },
    video: {
      type: 'string',
      arg: 'PATH',
      help: 'the clip',
      default: '/usr/share/doc/opencv-doc/examples/data/Megamind.avi',
    },
  },
  common: { model: { default: 'realesrgan-x4fast,esrgan-slim-x4,realesrgan-x4plus' } },
});
const values = cli.values;

const ffmpeg = resolveFfmpeg();

async function frames(file: string, width: number, height: number, filter = ''): Promise<Plane[]> {
  const { stdout } = await runProcess(
    ffmpeg,
    ['-v', 'error', '-i', file, '-vf', `${filter}${filter ? ',' : ''}format=rgb24`, '-f', 'rawvideo', 'pipe:1'],
    { maxStdoutBytes: 2 ** 31 - 1 },
  );
  const size = width * height * 3;
  const out: Plane[] = [];
  for (let at = 0; at + size <= stdout.length; at += size)
    out.push(lumaBt601(stdout.subarray(at, at + size), width, height));
  return out;
}

async function main(): Promise<void> {
  const target = await docsTarget('flicker', values);
  const machine = describeMachine(machineInfo());
  console.log(`# ${machine}`);
  const work = await mkdtemp(path.join(tmpdir(), 'bench-flicker-'));
  const sessions = new SessionCache({ executionProviders: ['cpu'] });
  const loadModel = createSrModelLoader({ sessions, ...benchRegistry() });
  try {
    const small = path.join(work, 'small.mp4');
    // A quarter of each side, kept even for 4:2:0.
    await runProcess(ffmpeg, [
      '-v',
      'error',
      '-ss',
      values.start,
      '-t',
      values.seconds,
      '-i',
      values.video,
      '-an',
      '-vf',
      'scale=trunc(iw/8)*2:trunc(ih/8)*2:flags=bicubic',
      '-c:v',
      'libx264',
      '-crf',
      '12',
      '-pix_fmt',
      'yuv420p',
      small,
    ]);
    const info = await probeMedia(small);
    const w = info.video?.width ?? 0;
    const h = info.video?.height ?? 0;
    const W = w * 4;
    const H = h * 4;
    const bicubic = meanFrameChange(await frames(small, W, H, `scale=${W}:${H}:flags=bicubic`));
    console.log(
      `# ${values.video} from ${values.start} s for ${values.seconds} s, downscaled to ${w}x${h}, upscaled x4 to ${W}x${H}`,
    );
    const rows: string[][] = [['bicubic', bicubic.toFixed(3), '1.00', '']];
    for (const model of splitList(values.model)) {
      const out = path.join(work, `${model}.mp4`);
      const started = performance.now();
      await upscaleVideoFile({ inputPath: small, outputPath: out, factor: '4', info, modelName: model }, loadModel);
      const seconds = (performance.now() - started) / 1000;
      const change = meanFrameChange(await frames(out, W, H));
      rows.push([model, change.toFixed(3), (change / bicubic).toFixed(2), seconds.toFixed(1)]);
      console.log(formatTable([], [rows.at(-1)!]));
    }
    const header = TABLES.flicker.header;
    console.log(formatTable(header, rows));
    console.log('\n' + markdownTable(header, rows));
    const caption = `${path.basename(values.video)} from ${values.start} s for ${values.seconds} s, downscaled to ${w}x${h}, upscaled x4 to ${W}x${H}:`;
    await writeDocsBlock(target, 'flicker', [{ caption, header, rows }], machine);
    await cli.done({ tables: [{ caption, header, rows }] });
  } finally {
    await sessions.release();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
