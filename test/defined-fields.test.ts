import { describe, expect, it } from 'vitest';
import { definedFields } from '../src/defined-fields.js';

describe('definedFields', () => {
  it('leaves out undefined values and keeps the rest, null and falsy ones included, in order', () => {
    const out = definedFields({ a: 1, b: undefined, c: null, d: 0, e: '', f: false });
    expect(out).toStrictEqual({ a: 1, c: null, d: 0, e: '', f: false });
    expect(Object.keys(out)).toEqual(['a', 'c', 'd', 'e', 'f']);
  });

  it('gives an empty object when every value is undefined', () => {
    expect(definedFields({ signal: undefined })).toStrictEqual({});
  });
});
