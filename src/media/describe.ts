/** Human wording for sniffed formats, so every "Expected X but received Y" message reads the same. */
import type { SniffedFormat } from './sniff.js';

const DESCRIPTIONS: Record<SniffedFormat, string> = {
  jpeg: 'a JPEG image',
  png: 'a PNG image',
  webp: 'a WebP image',
  gif: 'a GIF',
  mp4: 'an MP4 file',
  mov: 'a MOV file',
  m4v: 'an M4V file',
  m4a: 'an M4A file',
  mkv: 'an MKV file',
  webm: 'a WebM file',
  mp3: 'an MP3 file',
  wav: 'a WAV file',
  aac: 'an AAC (ADTS) file',
  ogg: 'an Ogg file',
};

export function describeFormat(format: SniffedFormat | null): string {
  return format === null ? 'content in no supported format' : DESCRIPTIONS[format];
}
