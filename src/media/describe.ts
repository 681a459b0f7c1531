/**
 * The one table of format names: the short name a list of allowed formats uses ("MP4, MOV or MKV")
 * and the description a received format gets, so every "Expected X but received Y" message reads the same.
 */
import type { SniffedFormat } from './sniff.js';

interface FormatNames {
  /** As listed among allowed formats: `JPEG`. */
  readonly name: string;
  /** As received content: `a JPEG image`. */
  readonly description: string;
}

const FORMATS: Readonly<Record<SniffedFormat, FormatNames>> = {
  jpeg: { name: 'JPEG', description: 'a JPEG image' },
  png: { name: 'PNG', description: 'a PNG image' },
  webp: { name: 'WebP', description: 'a WebP image' },
  gif: { name: 'GIF', description: 'a GIF' },
  mp4: { name: 'MP4', description: 'an MP4 file' },
  mov: { name: 'MOV', description: 'a MOV file' },
  m4v: { name: 'M4V', description: 'an M4V file' },
  m4a: { name: 'M4A', description: 'an M4A file' },
  mkv: { name: 'MKV', description: 'an MKV file' },
  webm: { name: 'WebM', description: 'a WebM file' },
  mp3: { name: 'MP3', description: 'an MP3 file' },
  wav: { name: 'WAV', description: 'a WAV file' },
  aac: { name: 'AAC', description: 'an AAC (ADTS) file' },
  ogg: { name: 'OGG', description: 'an Ogg file' },
  flac: { name: 'FLAC', description: 'a FLAC file' },
};

export function describeFormat(format: SniffedFormat | null): string {
  return format === null ? 'content in no supported format' : FORMATS[format].description;
}

/** The short name; a value outside the table (it should not reach here) is quoted rather than lost. */
export function formatName(format: string): string {
  return Object.hasOwn(FORMATS, format) ? FORMATS[format as SniffedFormat].name : JSON.stringify(format);
}
