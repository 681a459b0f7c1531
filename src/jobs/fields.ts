/**
 * Field readers of the input parsers (each kind's `parse`, the envelope's in schemas.ts). Each reads
 * one field, applies the shared rules (null means absent; whitespace-only text means absent) and
 * throws the given code with the shared wording. A parser calls them in the spec's order: the order
 * of the calls is the order of the checks, and the first failing check wins. That is why each field
 * is checked by its own small zod schema instead of one object schema: zod collects every issue at
 * once and does not rank them the way the spec's tables do.
 */
import { z } from 'zod';
import { JobError, type ErrorCode } from '../errors.js';
import type { Fields } from './kind-contract.js';
import { charCount, expectedText, expectedValue, oneOf } from './messages.js';

const objectSchema = z.record(z.string(), z.unknown());
const nonBlankString = z.string().refine((s) => s.trim() !== '');
const anyString = z.string();
const anyBoolean = z.boolean();

const NON_EMPTY_STRING = 'a non-empty string';

export function read(fields: Fields, key: string): unknown {
  // Own properties only: a body of {"constructor": ...} must not reach Object.prototype.
  const value = Object.hasOwn(fields, key) ? fields[key] : undefined;
  return value === null ? undefined : value;
}

export function asObject(subject: string, value: unknown): Fields {
  if (!objectSchema.safeParse(value).success) {
    throw new JobError('INVALID_JOB', expectedValue(subject, 'an object', value));
  }
  // The original, not zod's copy: copying would turn an own "__proto__" key into a prototype.
  return value as Fields;
}

export function requiredText(
  fields: Fields,
  key: string,
  missing: ErrorCode,
  maxChars?: number,
  tooLong?: ErrorCode,
): string {
  const value = read(fields, key);
  const parsed = nonBlankString.safeParse(value);
  if (!parsed.success) throw new JobError(missing, expectedValue(key, NON_EMPTY_STRING, value));
  checkLength(key, parsed.data, maxChars, tooLong);
  return parsed.data;
}

/** An optional text field: absent, null or whitespace-only is dropped; anything but a string is INVALID_JOB. */
export function optionalText(fields: Fields, key: string, maxChars?: number, tooLong?: ErrorCode): string | undefined {
  const value = read(fields, key);
  if (value === undefined) return undefined;
  const parsed = anyString.safeParse(value);
  if (!parsed.success) throw new JobError('INVALID_JOB', expectedValue(key, 'a string', value));
  if (parsed.data.trim() === '') return undefined;
  checkLength(key, parsed.data, maxChars, tooLong);
  return parsed.data;
}

function checkLength(key: string, text: string, maxChars: number | undefined, tooLong: ErrorCode | undefined): void {
  if (maxChars === undefined || tooLong === undefined) return;
  const length = charCount(text);
  if (length > maxChars) {
    throw new JobError(tooLong, expectedText(key, `at most ${maxChars} characters`, `${length} characters`));
  }
}

export function optionalEnum<const T extends string, F extends T | undefined>(
  fields: Fields,
  key: string,
  values: readonly [T, ...T[]],
  fallback: F,
  invalid: ErrorCode,
): T | F {
  const value = read(fields, key);
  if (value === undefined) return fallback;
  const parsed = z.enum(values).safeParse(value);
  if (!parsed.success) throw new JobError(invalid, expectedValue(key, oneOf(values), value));
  return parsed.data as T;
}

export function optionalBoolean(fields: Fields, key: string, fallback: boolean, invalid: ErrorCode): boolean {
  const value = read(fields, key);
  if (value === undefined) return fallback;
  const parsed = anyBoolean.safeParse(value);
  if (!parsed.success) throw new JobError(invalid, expectedValue(key, 'a boolean', value));
  return parsed.data;
}
