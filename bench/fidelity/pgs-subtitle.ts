/**
 * A tiny Blu-ray PGS subtitle file (`.sup`), written byte by byte: ffmpeg has no PGS encoder, and
 * it encodes bitmap subtitles (DVB, DVD) only from bitmap ones, so the fidelity corpus needs one
 * made by hand. Each cue shows one filled rectangle of one palette colour, then clears it. Format:
 * segments "PG" + PTS + DTS (90 kHz) + type + size; a display set is PCS (composition), WDS
 * (window), PDS (palette), ODS (the run-length coded bitmap), END; a clearing set has no object.
 */

export interface PgsCue {
  /** Seconds. */
  start: number;
  end: number;
}

export interface PgsPicture {
  /** The video size the cues are composed on. */
  width: number;
  height: number;
  /** The rectangle shown. */
  box: { x: number; y: number; width: number; height: number };
}

const PCS = 0x16;
const WDS = 0x17;
const PDS = 0x14;
const ODS = 0x15;
const END = 0x80;

const u16 = (v: number): number[] => [(v >> 8) & 0xff, v & 0xff];

function segment(seconds: number, type: number, data: number[]): Buffer {
  const header = Buffer.alloc(13);
  header.write('PG', 0, 'latin1');
  header.writeUInt32BE(Math.round(seconds * 90_000), 2);
  header.writeUInt32BE(0, 6);
  header.writeUInt8(type, 10);
  header.writeUInt16BE(data.length, 11);
  return Buffer.concat([header, Buffer.from(data)]);
}

/** Each line: one run of palette entry 1 across the box (`00 10LLLLLL CC`, or `00 11LLLLLL LLLLLLLL CC` from 64), then end of line. */
function runLengthBitmap(width: number, height: number): number[] {
  const line = width < 64 ? [0x00, 0x80 | width, 1] : [0x00, 0xc0 | (width >> 8), width & 0xff, 1];
  return Array.from({ length: height }, () => [...line, 0x00, 0x00]).flat();
}

/** The `.sup` bytes of `cues`, each showing the picture's box in white. */
export function pgsSubtitles(picture: PgsPicture, cues: readonly PgsCue[]): Buffer {
  const { box } = picture;
  const window = [1, 0, ...u16(box.x), ...u16(box.y), ...u16(box.width), ...u16(box.height)];
  const composition = (n: number, objects: number, state: number): number[] => [
    ...u16(picture.width),
    ...u16(picture.height),
    0x10,
    ...u16(n),
    state,
    0,
    0,
    objects,
    ...(objects === 0 ? [] : [...u16(0), 0, 0, ...u16(box.x), ...u16(box.y)]),
  ];
  const bitmap = runLengthBitmap(box.width, box.height);
  const objectLength = bitmap.length + 4;
  const object = [
    ...u16(0),
    0,
    0xc0,
    (objectLength >> 16) & 0xff,
    (objectLength >> 8) & 0xff,
    objectLength & 0xff,
    ...u16(box.width),
    ...u16(box.height),
    ...bitmap,
  ];
  const segments = cues.flatMap((cue, i) => [
    segment(cue.start, PCS, composition(2 * i, 1, 0x80)),
    segment(cue.start, WDS, window),
    // Palette entry 1: white (Y 235, Cr and Cb neutral), opaque.
    segment(cue.start, PDS, [0, 0, 1, 235, 128, 128, 255]),
    segment(cue.start, ODS, object),
    segment(cue.start, END, []),
    segment(cue.end, PCS, composition(2 * i + 1, 0, 0x00)),
    segment(cue.end, WDS, window),
    segment(cue.end, END, []),
  ]);
  return Buffer.concat(segments);
}
