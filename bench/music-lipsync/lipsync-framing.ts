/**
 * Lip-sync crop framing on real faces (docs/lipsync.md, "Crop framing"): for every face BlazeFace
 * finds in the project's real footage and pictures, where the mouth keypoint falls in the crop and
 * how far the generated test model's darkening (its mouth ellipse, placed where Wav2Lip's crops
 * hold the mouth) lands from the mouth keypoint in frame pixels, relative to the face height (the
 * detector box's height). Goal: within 5 % on every frontal face.
 *
 * Faces: every frame of opencv-doc's Megamind.avi, the bundled photos (test/fixtures/photos), every
 * picture in opencv-doc's data folder, and two multi-face pictures made of the astronaut (side by
 * side at two sizes; four in a grid, two of them turned 15 degrees). Both the axis-aligned crop
 * (vendor-lipsync-2) and the aligned one (vendor-lipsync-3) are measured. "before" is the
 * framing this replaced (a square around the box plus Wav2Lip's 10 px bottom pad, moved down 5 %),
 * by geometry: the mouth's height in that crop and how far below the mouth the ellipse fell.
 *
 *   media-worker bench lipsync-framing --help
 *
 * --out writes PNGs of a few faces: the frame with the mouth keypoint (green) and the darkening's
 * centre (red), and the 96x96 crop the network saw, enlarged.
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import ort from 'onnxruntime-node';
import sharp, { type Sharp } from 'sharp';
import { SessionCache } from '../../src/inference/index.js';
import { resolveFfmpeg, runProcess } from '../../src/media/index.js';
import {
  loadBlazeFace,
  BOX_PER_EYE_MOUTH,
  cropFace,
  EYES_PER_EYE_MOUTH,
  WAV2LIP_FRAMING,
  type FaceBox,
  type RgbFrame,
  OnnxLipsyncModel,
} from '../../src/kinds/lipsync/pipeline/index.js';
import { testModelManifest } from '../../scripts/make-test-lipsync-model.js';
import { lipsyncOneFace, measureFraming, type FaceFraming } from '../../scripts/lipsync-framing.js';
import { TABLES } from '../blocks.js';
import { describeMachine, machineInfo } from '../common.js';
import { benchCli } from '../harness.js';
import { docsTarget, markdownTable, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'lipsync-framing',
  options: {
    out: {
      type: 'string',
      arg: 'DIR',
      help: 'also write PNGs of a few faces there: the frame with its marks and the crop the network saw',
    },
    frames: { type: 'string', arg: 'N', help: 'at most N frames of each source (default: all)' },
  },
});
const values = cli.values;
const ROOT = new URL('../..', import.meta.url).pathname.replace(/dist\/$/, '');
const PHOTOS = path.join(ROOT, 'test/fixtures/photos');
const OPENCV_DATA = '/usr/share/doc/opencv-doc/examples/data';
const MEGAMIND = path.join(OPENCV_DATA, 'Megamind.avi');
/** |yaw| below this (nose within 20 % of the eye spacing of the eyes' midpoint) counts as frontal. */
const FRONTAL_YAW = 0.2;
const GOAL = 0.05;

async function toFrame(image: Sharp): Promise<RgbFrame> {
  const { data, info } = await image.removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.length), width: info.width, height: info.height };
}

async function videoFrames(file: string, limit?: number): Promise<RgbFrame[]> {
  const { stdout: probe } = await runProcess(resolveFfmpeg(), [
    '-v',
    'error',
    '-i',
    file,
    '-frames:v',
    '1',
    '-f',
    'image2pipe',
    '-c:v',
    'png',
    'pipe:1',
  ]);
  const { width = 0, height = 0 } = await sharp(probe).metadata();
  const { stdout } = await runProcess(
    resolveFfmpeg(),
    [
      '-v',
      'error',
      '-i',
      file,
      ...(limit ? ['-frames:v', String(limit)] : []),
      '-an',
      '-f',
      'rawvideo',
      '-pix_fmt',
      'rgb24',
      'pipe:1',
    ],
    { maxStdoutBytes: 1024 * 1024 * 1024 },
  );
  const size = width * height * 3;
  const frames: RgbFrame[] = [];
  for (let at = 0; at + size <= stdout.length; at += size)
    frames.push({ data: new Uint8Array(stdout.buffer, stdout.byteOffset + at, size), width, height });
  return frames;
}

/** Astronaut pictures with several faces: the detector's multi-face case on a real face. */
async function multiFacePictures(): Promise<{ name: string; frame: RgbFrame }[]> {
  const astronaut = path.join(PHOTOS, 'astronaut.png');
  const small = await sharp(astronaut).removeAlpha().flop().resize(300, 300).png().toBuffer();
  const pair = await toFrame(
    sharp({ create: { width: 812, height: 512, channels: 3, background: '#203040' } }).composite([
      { input: await sharp(astronaut).removeAlpha().png().toBuffer(), left: 0, top: 0 },
      { input: small, left: 512, top: 150 },
    ]),
  );
  const tile = (turn: number) =>
    sharp(astronaut)
      .removeAlpha()
      .resize(360, 360)
      .rotate(turn, { background: '#203040' })
      .resize(400, 400, { fit: 'cover' })
      .png()
      .toBuffer();
  const grid = await toFrame(
    sharp({ create: { width: 800, height: 800, channels: 3, background: '#203040' } }).composite([
      { input: await tile(0), left: 0, top: 0 },
      { input: await tile(15), left: 400, top: 0 },
      { input: await tile(-15), left: 0, top: 400 },
      { input: await sharp(astronaut).removeAlpha().flop().resize(400, 400).png().toBuffer(), left: 400, top: 400 },
    ]),
  );
  return [
    { name: 'astronaut pair', frame: pair },
    { name: 'astronaut grid', frame: grid },
  ];
}

/** The framing this replaced, by geometry: the mouth's height in its crop, and the ellipse's miss in pixels. */
function before(box: FaceBox): { mouthV: number; offsetPx: number } {
  const height = box.height + 10;
  const side = Math.max(box.width, height);
  const cy = box.y + height / 2 + 0.05 * side;
  const mouthV = (box.keypoints.mouth[1] - cy) / side + 0.5;
  return { mouthV, offsetPx: (WAV2LIP_FRAMING.mouthY - mouthV) * side };
}

interface Row {
  source: string;
  item: string;
  face: number;
  box: FaceBox;
  framing: FaceFraming;
  aligned: FaceFraming;
  before: { mouthV: number; offsetPx: number };
}

const f2 = (v: number) => v.toFixed(2);
const f3 = (v: number) => v.toFixed(3);
const pct = (v: number) => `${(100 * v).toFixed(1)} %`;

async function marked(
  frame: RgbFrame,
  data: Uint8Array,
  points: { at: readonly [number, number]; colour: string }[],
  file: string,
): Promise<void> {
  const svg =
    `<svg width="${frame.width}" height="${frame.height}" xmlns="http://www.w3.org/2000/svg">` +
    points
      .map(
        ({ at: [x, y], colour }) =>
          `<path d="M${x - 6} ${y}H${x + 6}M${x} ${y - 6}V${y + 6}" stroke="${colour}" stroke-width="1.5"/>`,
      )
      .join('') +
    '</svg>';
  await sharp(data, { raw: { width: frame.width, height: frame.height, channels: 3 } })
    .composite([{ input: Buffer.from(svg) }])
    .png()
    .toFile(file);
}

async function main(): Promise<void> {
  const target = await docsTarget('lipsync-framing', values);
  const machine = describeMachine(machineInfo());
  const sessions = new SessionCache({ thread: false });
  const detector = await loadBlazeFace('blazeface-back-256', { sessions });
  const { manifest, bytes } = testModelManifest();
  const model = new OnnxLipsyncModel(manifest, await ort.InferenceSession.create(bytes), 1);
  const out = values.out;
  if (out) await mkdir(out, { recursive: true });

  const items: { source: string; item: string; frame: RgbFrame }[] = [];
  for (const file of readdirSync(PHOTOS)
    .filter((f) => f.endsWith('.png'))
    .sort()) {
    items.push({ source: 'photos', item: file, frame: await toFrame(sharp(path.join(PHOTOS, file))) });
  }
  if (existsSync(OPENCV_DATA)) {
    for (const file of readdirSync(OPENCV_DATA)
      .filter((f) => /\.(jpe?g|png)$/i.test(f))
      .sort()) {
      items.push({ source: 'opencv-doc', item: file, frame: await toFrame(sharp(path.join(OPENCV_DATA, file))) });
    }
  }
  for (const { name, frame } of await multiFacePictures()) items.push({ source: 'multi-face', item: name, frame });
  if (existsSync(MEGAMIND)) {
    const limit = values.frames === undefined ? undefined : Number(values.frames);
    (await videoFrames(MEGAMIND, limit)).forEach((frame, i) =>
      items.push({ source: 'Megamind', item: `frame ${i}`, frame }),
    );
  }

  const rows: Row[] = [];
  let saved = 0;
  for (const { source, item, frame } of items) {
    const faces = await detector.detect(frame);
    for (const [face, box] of faces.entries()) {
      const framing = await measureFraming(frame, box, model);
      const aligned = await measureFraming(frame, box, model, { align: true });
      rows.push({ source, item, face, box, framing, aligned, before: before(box) });
      const pick = source !== 'Megamind' || item === 'frame 0' || item === 'frame 135' || item === 'frame 250';
      if (out && pick && saved < 40) {
        saved += 1;
        const stem = path.join(out, `${source}-${item}-${face}`.replace(/[^a-z0-9.-]+/gi, '_'));
        const loud = await lipsyncOneFace(frame, framing.crop, model, 4);
        await marked(
          frame,
          loud,
          [
            { at: box.keypoints.mouth, colour: '#00ff00' },
            { at: framing.darkening, colour: '#ff0000' },
          ],
          `${stem}-frame.png`,
        );
        const crop = cropFace(frame, aligned.crop, 96);
        await sharp(crop, { raw: { width: 96, height: 96, channels: 3 } })
          .resize(288, 288, { kernel: 'nearest' })
          .composite([
            {
              input: Buffer.from(
                `<svg width="288" height="288" xmlns="http://www.w3.org/2000/svg"><path d="M0 144H288" stroke="#ffff00" stroke-dasharray="4 4"/><ellipse cx="${48 * 3}" cy="${70 * 3}" rx="${20 * 3}" ry="${11 * 3}" fill="none" stroke="#ff0000"/></svg>`,
              ),
            },
          ])
          .png()
          .toFile(`${stem}-crop-aligned.png`);
      }
    }
  }
  await sessions.release();

  console.log(
    'source      item                   face  box h  yaw    mouth u,v (crop)  eyes v  nose v  offset px (x, y)   |offset|/face h  aligned  before: mouth v, miss px',
  );
  for (const r of rows) {
    const { framing: f, aligned: a } = r;
    console.log(
      `${r.source.padEnd(11)} ${r.item.padEnd(22)} ${String(r.face).padStart(4)}  ${r.box.height.toFixed(0).padStart(5)}  ${f2(f.yaw).padStart(5)}  ` +
        `${f3(f.mouthInCrop[0])}, ${f3(f.mouthInCrop[1])}      ${f3(f.eyesInCrop)}   ${f3(f.noseInCrop)}   ` +
        `${f2(f.offset[0]).padStart(6)}, ${f2(f.offset[1]).padStart(6)}     ${pct(f.offsetPerFaceHeight).padStart(7)}       ${pct(a.offsetPerFaceHeight).padStart(7)}  ` +
        `${f3(r.before.mouthV)}, ${r.before.offsetPx.toFixed(1)}`,
    );
  }
  const frontal = rows.filter((r) => Math.abs(r.framing.yaw) < FRONTAL_YAW);
  const worst = (list: Row[], pick: (r: Row) => number) => list.reduce((m, r) => Math.max(m, pick(r)), 0);
  const bySource = new Map<string, Row[]>();
  for (const r of rows) bySource.set(r.source, [...(bySource.get(r.source) ?? []), r]);
  console.log('\nsummary (offset = |darkening centre - mouth keypoint| / face height)');
  console.log(
    'source      faces  frontal  worst frontal  worst frontal aligned  worst any  mean mouth v   estimate / scale used, median: eye-mouth, eyes, box',
  );
  const summary: string[][] = [];
  for (const [source, list] of bySource) {
    const fr = list.filter((r) => Math.abs(r.framing.yaw) < FRONTAL_YAW);
    const meanV = list.reduce((s, r) => s + r.framing.mouthInCrop[1], 0) / list.length;
    const percent = (v: number): string => (100 * v).toFixed(1);
    summary.push([
      source,
      String(list.length),
      String(fr.length),
      fr.length === 0 ? '-' : percent(worst(fr, (r) => r.framing.offsetPerFaceHeight)),
      fr.length === 0 ? '-' : percent(worst(fr, (r) => r.aligned.offsetPerFaceHeight)),
      percent(worst(list, (r) => r.framing.offsetPerFaceHeight)),
      f3(meanV),
    ]);
    const ratios = (k: 'direct' | 'eyes' | 'box') => {
      const div = { direct: 1, eyes: EYES_PER_EYE_MOUTH, box: BOX_PER_EYE_MOUTH }[k];
      const v = list
        .map((r) => r.framing.scaleEstimates[k] / div / r.framing.scaleEstimates.used)
        .sort((x, y) => x - y);
      return f2(v[Math.floor(v.length / 2)] ?? Number.NaN);
    };
    console.log(
      `${source.padEnd(11)} ${String(list.length).padStart(5)}  ${String(fr.length).padStart(7)}  ${pct(worst(fr, (r) => r.framing.offsetPerFaceHeight)).padStart(13)}  ` +
        `${pct(worst(fr, (r) => r.aligned.offsetPerFaceHeight)).padStart(21)}  ${pct(worst(list, (r) => r.framing.offsetPerFaceHeight)).padStart(9)}  ${f3(meanV).padStart(11)}   ` +
        `${ratios('direct')}, ${ratios('eyes')}, ${ratios('box')}`,
    );
  }
  const boxPerEyeMouth = rows.map((r) => r.box.height / r.framing.scaleEstimates.direct).sort((x, y) => x - y);
  const eyesPerEyeMouth = rows
    .map((r) => r.framing.scaleEstimates.eyes / r.framing.scaleEstimates.direct)
    .sort((x, y) => x - y);
  const med = (v: number[]) => f2(v[Math.floor(v.length / 2)] ?? Number.NaN);
  console.log(
    `\nmedian box height / eye-to-mouth: ${med(boxPerEyeMouth)}; median eye spacing / eye-to-mouth: ${med(eyesPerEyeMouth)}`,
  );
  const range = (v: number[]) =>
    `${f3(Math.min(...v))}-${f3(Math.max(...v))} (mean ${f3(v.reduce((x, y) => x + y, 0) / v.length)})`;
  console.log(
    `frontal faces, in the crop: eyes v ${range(frontal.map((r) => r.framing.eyesInCrop))}, nose tip v ${range(frontal.map((r) => r.framing.noseInCrop))}`,
  );
  const beforeMiss = frontal.map((r) => Math.abs(r.before.offsetPx) / r.box.height);
  const beforeV = frontal.map((r) => r.before.mouthV);
  console.log(
    `before, on the frontal faces: mouth v ${f3(Math.min(...beforeV))}-${f3(Math.max(...beforeV))}, ellipse below the mouth by ` +
      `${pct(Math.min(...beforeMiss))}-${pct(Math.max(...beforeMiss))} of the face height (mean ${pct(beforeMiss.reduce((x, y) => x + y, 0) / beforeMiss.length)})`,
  );
  const worstFrontal = Math.max(
    worst(frontal, (r) => r.framing.offsetPerFaceHeight),
    worst(frontal, (r) => r.aligned.offsetPerFaceHeight),
  );
  console.log(
    `${frontal.length} frontal faces of ${rows.length}; worst frontal offset ${pct(worstFrontal)} (goal ${pct(GOAL)}): ${worstFrontal <= GOAL ? 'met' : 'NOT met'}`,
  );
  console.log(`\n${markdownTable(TABLES.lipsyncFraming.header, summary)}`);
  const caption = `Distance from the darkening's centre to the mouth keypoint over the face height (frontal: |yaw| < ${FRONTAL_YAW}; goal ${pct(GOAL)}):`;
  await writeDocsBlock(
    target,
    'lipsync-framing',
    [{ caption, header: TABLES.lipsyncFraming.header, rows: summary }],
    machine,
  );
  await cli.done({ tables: [{ caption, header: TABLES.lipsyncFraming.header, rows: summary }] });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
