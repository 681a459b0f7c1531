import { describe, expect, it } from 'vitest';
import { chooseSrModel, parseSrModelChoices } from '../../src/inference/sr-choice.js';

describe('super-resolution network choice', () => {
  it('defaults: Real-ESRGAN x4plus for images at every factor, the compact net for video and mouths', () => {
    const d = parseSrModelChoices('');
    expect((['1', '2', '4'] as const).map((f) => chooseSrModel(d, 'image', f))).toEqual([
      'realesrgan-x4plus',
      'realesrgan-x4plus',
      'realesrgan-x4plus',
    ]);
    expect(chooseSrModel(d, 'video', '2')).toBe('realesrgan-x4fast');
    expect(chooseSrModel(d, 'mouth', '4')).toBe('realesrgan-x4fast');
  });

  it('a setting overrides one use, or one factor of a use, and keeps the rest', () => {
    const c = parseSrModelChoices('video=esrgan-slim-x4, video:2=esrgan-slim-x2,image:1=realesrgan-x4fast');
    expect(chooseSrModel(c, 'video', '4')).toBe('esrgan-slim-x4');
    expect(chooseSrModel(c, 'video', '2')).toBe('esrgan-slim-x2');
    expect(chooseSrModel(c, 'image', '1')).toBe('realesrgan-x4fast');
    expect(chooseSrModel(c, 'image', '4')).toBe('realesrgan-x4plus');
    expect(chooseSrModel(c, 'mouth', '4')).toBe('realesrgan-x4fast');
  });

  it.each([
    ['bogus', 'Expected entries like image=NAME'],
    ['audio=x', 'Expected entries like image=NAME'],
    ['mouth:4=x', 'Expected a factor of 1, 2, 4 on an image or video entry'],
    ['image:8=x', 'Expected a factor of 1, 2, 4'],
    ['image=Bad_Name', 'Expected a model name of lower-case letters'],
  ])('refuses %j', (text, message) => {
    expect(() => parseSrModelChoices(text)).toThrow(message);
  });
});
