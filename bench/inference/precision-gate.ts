/**
 * The quality gate of the reduced-precision variants (issue 48): each int8 (or float16) variant of
 * the registry against its float32 network, both run through the worker's own tiling engine
 * (SessionCache sessions on worker threads, upscaleRgb), on centre crops of the bundled photos and
 * of the sample video's frames (Megamind.avi at 2, 5 and 8 s, none of which calibration uses: see
 * scripts/calibrate-int8.ts). What each figure is and how the gate decides:
 * bench/inference/precision-gate-figures.ts. In short: the variant passes when its lowest PSNR
 * against float32 is at least 40 dB, its colour moves from float32's no more than float32's moves
 * from the input, and tiles stay seamless (tiled within 1/255 of untiled).
 *
 *   media-worker bench precision-gate [--model realesrgan-x4fast-int8] [--size 128] [--write]
 *
 * --write puts the figures into each variant's manifest (`gate`, read by `media-worker models list`
 * and WORKER_PRECISION=auto), with when, where and with which command they were taken; no other
 * field of the manifest changes.
 *
 * Timing: the float32 network and the variant alternate on the same input (which goes first swaps
 * every run), --threads intra-op threads each; the gate keeps the median ratio over --repeat rounds
 * of every input. The first round's outputs are the ones measured for quality.
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import sharp from 'sharp';
import {
  defaultFeather,
  defaultModelsDir,
  ensureModelFile,
  formatManifest,
  getManifest,
  listManifests,
  parseManifest,
  type PrecisionGate,
  type RgbImage,
  SessionCache,
  type SrModel,
  type SuperResolutionManifest,
  upscaleRgb,
} from '../../src/inference/index.js';
import {
  benchRegistry,
  decodeFrame,
  describeMachine,
  formatTable,
  intOption,
  loadRgb,
  machineInfo,
  resizeLanczos,
  selectPhotos,
  splitList,
} from '../common.js';
import type { DocTable } from '../doc-block.js';
import { benchCli } from '../harness.js';
import {
  defaultCropSide,
  type InputFigures,
  maxLevelDifference,
  meanDeltaE,
  MIN_PSNR_DB,
  psnrRgb,
  seamCropSide,
  seamTile,
  SEAMLESS_LEVELS,
  lumaGradient,
  summariseGate,
} from './precision-gate-figures.js';

const cli = benchCli({
  name: 'precision-gate',
  options: {
    photos: { type: 'string', arg: 'NAME|PATH[,...]', help: 'the photos', default: 'astronaut,chelsea,coffee' },
    video: {
      type: 'string',
      arg: 'PATH',
      help: 'the sample video',
      default: '/usr/share/doc/opencv-doc/examples/data/Megamind.avi',
    },
    frames: { type: 'string', arg: 'S[,S...]', help: "the video's frames, in seconds", default: '2,5,8' },
    size: {
      type: 'string',
      arg: 'PX',
      help: 'centre crop side in input pixels (default: 128 for the compact networks, 96 for x4plus-sized ones)',
    },
    'seam-tile': {
      type: 'string',
      arg: 'PX',
      help: "seam check: tile side, with the variant manifest's overlap (default: the smallest that overlap allows, the most seams)",
    },
    'seam-size': {
      type: 'string',
      arg: 'PX',
      help: "seam check: crop side of its own on the first photo (default: the gate's crops where they are larger than a tile, else two tiles a side)",
    },
    'skip-float32-seams': {
      type: 'boolean',
      help: "seam check: leave out the float32 network's own figure (a reference only; it costs float32 runs of every tile)",
    },
    write: { type: 'boolean', help: "write the figures into each variant's manifest (its `gate` field only)" },
  },
  common: {
    model: { help: 'the variants, by manifest name (default: every int8 variant of the registry)' },
    threads: { default: '2' },
    repeat: {
      default: '3',
      help: 'timed rounds over every input (the median speed ratio is kept; the first round gives the quality figures)',
    },
  },
  notes:
    'On 2 cores: realesrgan-x4fast-int8 at 128 px takes about 1.5 minutes, realesrgan-x4plus-int8 at 96 px about 5 (float32\n' +
    'about 6 s a run; its seam check runs on a 184-pixel crop of its own, as 80 pixels of overlap leave no seam in 96).\n' +
    "The gate: lowest PSNR >= 40 dB, colour difference <= the float32 network's own, tiled within 1/255.",
});
const values = cli.values;

interface Input {
  label: string;
  image: RgbImage;
}

/** A centre crop of at most `side` of one video frame (ffmpeg, as the calibration decodes it). */
async function frameCrop(video: string, seconds: number, side: number): Promise<RgbImage> {
  const frame = await decodeFrame(video, seconds);
  const w = Math.min(side, frame.width);
  const h = Math.min(side, frame.height);
  const { data } = await sharp(frame.data, { raw: { width: frame.width, height: frame.height, channels: 3 } })
    .extract({ left: Math.floor((frame.width - w) / 2), top: Math.floor((frame.height - h) / 2), width: w, height: h })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: w, height: h, channels: 3 };
}

async function gateInputs(side: number): Promise<Input[]> {
  const inputs: Input[] = [];
  for (const photo of selectPhotos(values.photos)) {
    const image = await loadRgb(photo.path, side);
    inputs.push({ label: `photo:${photo.name} ${image.width}x${image.height}`, image });
  }
  for (const seconds of splitList(values.frames).map(Number)) {
    if (!Number.isFinite(seconds) || seconds < 0)
      throw new RangeError(`Expected --frames to list seconds but received ${JSON.stringify(values.frames)}`);
    const image = await frameCrop(values.video, seconds, side);
    inputs.push({
      label: `frame:${path.basename(values.video, path.extname(values.video))}@${seconds}s ${image.width}x${image.height}`,
      image,
    });
  }
  return inputs;
}

/** The reduced-precision variants to gate: the named ones, else every int8 variant of the registry. */
async function variants(): Promise<SuperResolutionManifest[]> {
  const registry = benchRegistry();
  const named = values.model === undefined ? undefined : splitList(values.model);
  const all =
    named === undefined ? await listManifests(registry) : await Promise.all(named.map((n) => getManifest(n, registry)));
  const chosen = all.filter(
    (m): m is SuperResolutionManifest =>
      m.task === 'super-resolution' &&
      (m.source.kind === 'int8' || (named !== undefined && m.source.kind === 'float16')),
  );
  const refused = (named ?? []).filter((n) => !chosen.some((m) => m.name === n));
  if (refused.length > 0)
    throw new Error(
      `Expected reduced-precision variants (source kind int8 or float16) but ${refused.join(', ')} ${refused.length === 1 ? 'is' : 'are'} not`,
    );
  if (chosen.length === 0)
    throw new Error(
      'Expected an int8 variant in the registry (scripts/calibrate-int8.ts makes them) but there is none',
    );
  return chosen;
}

function float32Of(variant: SuperResolutionManifest): string {
  const source = variant.source;
  if (source.kind !== 'int8' && source.kind !== 'float16')
    throw new Error(`Expected ${variant.name} to be a reduced-precision variant`);
  return source.of;
}

/** Label of a variant's precision: `int8`, `float16`. */
function precisionOf(variant: SuperResolutionManifest): string {
  return variant.source.kind;
}

interface VariantResult {
  name: string;
  of: string;
  side: number;
  /** The seam check: its tile, overlap and crops, and the float32 network's largest difference there (null: not measured). */
  seam: { tile: number; overlap: number; crops: string[]; float32MaxDiff: number | null };
  inputs: InputFigures[];
  seamDiffs: number[];
  gate: PrecisionGate;
}

async function measureVariant(
  variant: SuperResolutionManifest,
  sessions: SessionCache,
  rounds: number,
  measured: string,
): Promise<VariantResult> {
  const registry = benchRegistry();
  const base = await getManifest(float32Of(variant), registry);
  if (base.task !== 'super-resolution') throw new Error(`Expected ${base.name} to be a super-resolution network`);
  if (base.scale !== variant.scale)
    throw new Error(`Expected ${variant.name} to scale as ${base.name} (x${base.scale}) but it is x${variant.scale}`);
  const model = async (m: SuperResolutionManifest): Promise<SrModel> => {
    const session = await sessions.get((await ensureModelFile(m.name, registry)).path);
    return { scale: m.scale, range: m.input.range, run: (input, dims) => session.run(input, dims) };
  };
  const float32 = await model(base);
  const reduced = await model(variant);
  const overlap = variant.tile.overlap;
  const untiled = (net: SrModel, image: RgbImage): Promise<RgbImage> =>
    upscaleRgb(net, image, { tile: Math.max(image.width, image.height), overlap });
  const timed = async (net: SrModel, image: RgbImage): Promise<{ ms: number; out: RgbImage }> => {
    const started = performance.now();
    const out = await untiled(net, image);
    return { ms: performance.now() - started, out };
  };

  const side = intOption('size', values.size, 16) ?? defaultCropSide(base.macsPerInputPixel);
  const inputs = await gateInputs(side);
  console.log(
    `\n${variant.name} (${precisionOf(variant)} of ${base.name}): ${inputs.length} inputs of at most ${side}x${side}, ${rounds} rounds`,
  );
  // One untimed run of each: the first call at a shape pays for ONNX Runtime's planning.
  await untiled(float32, inputs[0]!.image);
  await untiled(reduced, inputs[0]!.image);

  const figures: InputFigures[] = [];
  const untiledOutputs: { float32: RgbImage; variant: RgbImage }[] = [];
  for (let round = 0; round < rounds; round += 1) {
    for (const [i, input] of inputs.entries()) {
      const floatFirst = (round + i) % 2 === 0;
      const a = await timed(floatFirst ? float32 : reduced, input.image);
      const b = await timed(floatFirst ? reduced : float32, input.image);
      const [f, v] = floatFirst ? [a, b] : [b, a];
      if (round === 0) {
        const { width, height } = f.out;
        const [fSmall, vSmall] = [
          (await resizeLanczos(f.out, input.image.width, input.image.height)).data,
          (await resizeLanczos(v.out, input.image.width, input.image.height)).data,
        ];
        figures.push({
          label: input.label,
          psnrDb: psnrRgb(v.out.data, f.out.data, width, height),
          gradient: lumaGradient(v.out.data, width, height),
          float32Gradient: lumaGradient(f.out.data, width, height),
          deltaE: meanDeltaE(vSmall, fSmall),
          deltaEFullSize: meanDeltaE(v.out.data, f.out.data),
          toleranceDeltaE: meanDeltaE(fSmall, input.image.data),
          speedRatios: [],
        });
        untiledOutputs.push({ float32: f.out, variant: v.out });
      }
      figures[i]!.speedRatios.push(f.ms / v.ms);
      const fig = figures[i]!;
      console.log(
        `  round ${round + 1} ${input.label.padEnd(28)} float32 ${f.ms.toFixed(0).padStart(6)} ms  ${precisionOf(variant)} ${v.ms.toFixed(0).padStart(6)} ms  x${(f.ms / v.ms).toFixed(2)}` +
          (round === 0
            ? `  PSNR ${fig.psnrDb.toFixed(2)} dB  sharpness ${(fig.gradient / fig.float32Gradient).toFixed(3)}  ΔE00 ${fig.deltaE.toFixed(3)} (float32 vs input ${fig.toleranceDeltaE.toFixed(3)})`
            : ''),
      );
    }
  }

  // Seams: the variant tiled against itself in one tile, and the float32 network so for reference.
  const feather = defaultFeather(overlap);
  const tile = intOption('seam-tile', values['seam-tile'], 1) ?? seamTile(overlap, feather);
  if (tile <= 2 * overlap + 3 * feather)
    throw new RangeError(
      `Expected --seam-tile to be more than 2 * overlap + 3 * feather (${2 * overlap + 3 * feather}) for ${variant.name} but received ${tile}`,
    );
  const seamSide = intOption('seam-size', values['seam-size'], 1);
  const onGate =
    seamSide === undefined
      ? inputs.flatMap((input, i) =>
          Math.max(input.image.width, input.image.height) > tile ? [{ input, untiled: untiledOutputs[i]! }] : [],
        )
      : [];
  const seamInputs =
    onGate.length > 0
      ? onGate
      : [await ownSeamCrop(seamSide ?? seamCropSide(tile, overlap, feather), { float32, variant: reduced }, untiled)];
  if (seamInputs.every(({ input }) => Math.max(input.image.width, input.image.height) <= tile)) {
    throw new RangeError(
      `Expected the seam check's crop to be larger than its tile (${tile}) but it is not: pass a larger --seam-size`,
    );
  }
  const seamDiffs: number[] = [];
  const float32SeamDiffs: number[] = [];
  for (const { input, untiled: whole } of seamInputs) {
    const tiled = await upscaleRgb(reduced, input.image, { tile, overlap });
    seamDiffs.push(maxLevelDifference(tiled.data, whole.variant.data));
    const reference = values['skip-float32-seams']
      ? undefined
      : maxLevelDifference((await upscaleRgb(float32, input.image, { tile, overlap })).data, whole.float32.data);
    if (reference !== undefined) float32SeamDiffs.push(reference);
    console.log(
      `  seams ${input.label.padEnd(28)} ${tiled.tiles} tiles of ${tiled.tileWidth}x${tiled.tileHeight} (overlap ${overlap}): largest difference to one tile ` +
        `${seamDiffs.at(-1)}/255${reference === undefined ? '' : ` (float32: ${reference}/255)`}`,
    );
  }

  return {
    name: variant.name,
    of: base.name,
    side,
    seam: {
      tile,
      overlap,
      crops: seamInputs.map(({ input }) => input.label),
      float32MaxDiff: float32SeamDiffs.length === 0 ? null : Math.max(...float32SeamDiffs),
    },
    inputs: figures,
    seamDiffs,
    gate: summariseGate(figures, seamDiffs, measured),
  };
}

/** The seam check's own crop of the first photo, with both networks' untiled outputs of it. */
async function ownSeamCrop(
  side: number,
  nets: { float32: SrModel; variant: SrModel },
  untiled: (net: SrModel, image: RgbImage) => Promise<RgbImage>,
): Promise<{ input: Input; untiled: { float32: RgbImage; variant: RgbImage } }> {
  const photo = selectPhotos(values.photos)[0]!;
  const image = await loadRgb(photo.path, side);
  const input = { label: `photo:${photo.name} ${image.width}x${image.height}`, image };
  const variant = await untiled(nets.variant, image);
  const float32 = values['skip-float32-seams'] ? variant : await untiled(nets.float32, image);
  return { input, untiled: { float32, variant } };
}

/** Puts `gate` into the variant's manifest file, every other field as it was. */
async function writeGate(name: string, gate: PrecisionGate): Promise<string> {
  const file = path.join(benchRegistry().modelsDir ?? defaultModelsDir(), `${name}.json`);
  const manifest = parseManifest(JSON.parse(await readFile(file, 'utf8')), file);
  if (manifest.task !== 'super-resolution') throw new Error(`Expected ${file} to be a super-resolution manifest`);
  await writeFile(file, formatManifest({ ...manifest, gate }));
  return file;
}

const HEADER = [
  'input',
  'PSNR dB',
  'sharpness',
  'ΔE00 vs float32',
  'ΔE00 full size',
  'float32 ΔE00 vs input',
  'speed vs float32 (median)',
];
const SUMMARY_HEADER = [
  'variant',
  'PSNR min / mean dB',
  'sharpness',
  'ΔE00 (tolerance)',
  'tiled max diff (float32)',
  'speed vs float32',
  'passes',
];

function tablesOf(results: readonly VariantResult[], threads: number): DocTable[] {
  const tables: DocTable[] = results.map((r) => ({
    caption: `${r.name} against ${r.of}, crops of at most ${r.side}x${r.side}, ${threads} threads`,
    header: HEADER,
    rows: r.inputs.map((i) => [
      i.label,
      i.psnrDb.toFixed(2),
      (i.gradient / i.float32Gradient).toFixed(3),
      i.deltaE.toFixed(3),
      i.deltaEFullSize.toFixed(3),
      i.toleranceDeltaE.toFixed(3),
      `${[...i.speedRatios].sort((a, b) => a - b)[Math.floor(i.speedRatios.length / 2)]!.toFixed(2)}x`,
    ]),
  }));
  tables.push({
    caption: `The gate: lowest PSNR >= ${MIN_PSNR_DB} dB, ΔE00 <= the float32 network's own, tiled within ${SEAMLESS_LEVELS}/255`,
    header: SUMMARY_HEADER,
    rows: results.map(({ name, gate: g, seam }) => [
      name,
      `${g.psnrMinDb.toFixed(2)} / ${g.psnrMeanDb.toFixed(2)}`,
      g.sharpnessRatio.toFixed(3),
      `${g.colourDeltaE.toFixed(3)} (${g.colourToleranceDeltaE.toFixed(3)})`,
      `${g.tiledMaxDiff}/255${seam.float32MaxDiff === null ? '' : ` (${seam.float32MaxDiff}/255)`}`,
      `${g.speedVsFloat32.toFixed(2)}x`,
      g.passes ? 'yes' : 'no',
    ]),
  });
  return tables;
}

async function main(): Promise<void> {
  const threads = intOption('threads', values.threads) ?? 2;
  const rounds = intOption('repeat', values.repeat, 1) ?? 3;
  const machine = machineInfo();
  console.log(describeMachine(machine));
  const command = ['media-worker bench precision-gate', ...process.argv.slice(2)].join(' ');
  const measured = `${machine.date.slice(0, 16).replace('T', ' ')} UTC; ${machine.cpu}, ${machine.cores} cores, ${threads} threads, load average ${machine.loadAverage.join(' ')}; ${command}`;
  const chosen = await variants();
  const sessions = new SessionCache({ executionProviders: ['cpu'], threads });
  const results: VariantResult[] = [];
  try {
    for (const variant of chosen) results.push(await measureVariant(variant, sessions, rounds, measured));
  } finally {
    await sessions.release();
  }
  const tables = tablesOf(results, threads);
  for (const t of tables) console.log(`\n${t.caption}\n${formatTable(t.header, t.rows)}`);
  if (values.write) {
    for (const r of results)
      console.log(`gate written to ${path.relative(process.cwd(), await writeGate(r.name, r.gate))}`);
  }
  await cli.done({ tables, data: { results } });
}

await main();
