/**
 * Still-image formats outside the contract are named in their refusal (issue 30, item 6), from
 * their first bytes; the sniffer itself still refuses them (null).
 */
import { describe, expect, it } from 'vitest';
import { describeUnsupportedImage, sniffBuffer } from '../../src/media/index.js';

function ftyp(major: string, ...compatible: string[]): Buffer {
  const box = Buffer.alloc(16 + 4 * compatible.length);
  box.writeUInt32BE(box.length, 0);
  box.write(`ftyp${major}`, 4, 'latin1');
  compatible.forEach((brand, i) => box.write(brand, 16 + 4 * i, 'latin1'));
  return Buffer.concat([box, Buffer.alloc(32)]);
}

describe('describeUnsupportedImage', () => {
  it.each([
    ['AVIF', ftyp('avif', 'mif1', 'miaf'), 'an AVIF image'],
    ['HEIF listing AVIF', ftyp('mif1', 'mif1', 'avif'), 'an AVIF image'],
    ['HEIC', ftyp('heic', 'mif1', 'heic'), 'a HEIC image'],
    ['HEIF', ftyp('mif1', 'mif1'), 'a HEIF image'],
    ['TIFF (little-endian)', Buffer.from('II*\0\x08\0\0\0', 'latin1'), 'a TIFF image'],
    ['TIFF (big-endian)', Buffer.from('MM\0*\0\0\0\x08', 'latin1'), 'a TIFF image'],
    ['JPEG XL codestream', Buffer.from([0xff, 0x0a, 0, 0]), 'a JPEG XL image'],
    [
      'JPEG XL container',
      Buffer.concat([Buffer.from([0, 0, 0, 12]), Buffer.from('JXL \r\n\x87\n', 'latin1')]),
      'a JPEG XL image',
    ],
    ['Photoshop', Buffer.from('8BPS\0\x01', 'latin1'), 'a Photoshop (PSD) file'],
  ])('names %s', (_, head, description) => {
    expect(sniffBuffer(head)).toBeNull();
    expect(describeUnsupportedImage(head)).toBe(description);
  });

  it('names a BMP only with a plausible header, and nothing for text or an MP4', () => {
    const bmp = Buffer.alloc(54);
    bmp.write('BM', 0, 'latin1');
    bmp.writeUInt32LE(40, 14);
    expect(describeUnsupportedImage(bmp)).toBe('a BMP image');
    expect(describeUnsupportedImage(Buffer.from('BM is a band name, not a bitmap', 'latin1'))).toBeUndefined();
    expect(describeUnsupportedImage(Buffer.from('hello world'))).toBeUndefined();
    expect(describeUnsupportedImage(ftyp('isom', 'isom', 'mp41'))).toBeUndefined();
  });
});
