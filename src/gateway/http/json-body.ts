/**
 * The JSON body parser. Fastify's own refuses `__proto__` keys but reports every failure as "Body
 * is not valid JSON"; this one says which it was. Before JSON.parse, one linear scan bounds the
 * nesting depth: a body of nested `[` costs JSON.parse (and its reviver) far more than its size
 * suggests, and blocks the event loop for every other account meanwhile. The size is bounded
 * before that by Fastify's body limit (GATEWAY_BODY_LIMIT_BYTES). `__proto__` and `constructor` keys are refused
 * at any depth: JSON.parse keeps them as plain own properties, but code that copies objects later
 * might not.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Deeper than any request of the API needs (a job is 3 levels deep). */
export const MAX_JSON_DEPTH = 16;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether `text`'s arrays and objects nest deeper than `max`, counted outside strings; stops at the first level too deep. */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '')
    throw new ApiError('INVALID_JOB', 400, 'Expected the body to be a JSON object but received an empty body');
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) {
    throw new ApiError(
      'INVALID_JOB',
      400,
      `Expected JSON nested at most ${MAX_JSON_DEPTH} levels deep but received deeper nesting`,
    );
  }
  let value: unknown;
  try {
    // No reviver: JSON.parse calls one for every value, 50 times slower on a wide array.
    value = JSON.parse(text);
  } catch (err) {
    throw new ApiError(
      'INVALID_JOB',
      400,
      `Expected the body to be valid JSON but received invalid JSON (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  const forbidden = forbiddenKey(value);
  if (forbidden !== undefined)
    throw new ApiError(
      'INVALID_JOB',
      400,
      `Expected no key named ${JSON.stringify(forbidden)} in the body but received one`,
    );
  return value;
}

/** The first forbidden key of any object in `value` (JSON.parse keeps `__proto__` as an own key, escaped or not). */
function forbiddenKey(value: unknown): string | undefined {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const v = pending.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (const item of v) if (typeof item === 'object' && item !== null) pending.push(item);
      continue;
    }
    for (const key of Object.keys(v)) {
      if (FORBIDDEN_KEYS.has(key)) return key;
      const child = (v as Record<string, unknown>)[key];
      if (typeof child === 'object' && child !== null) pending.push(child);
    }
  }
  return undefined;
}

export function useJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      done(err as Error, undefined);
    }
  });
}
