/**
 * The JSON body parser. Fastify's own refuses `__proto__` keys but reports every failure as "Body
 * is not valid JSON"; this one says which it was. `__proto__` and `constructor` keys are refused
 * at any depth: JSON.parse keeps them as plain own properties, but code that copies objects later
 * might not.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new ApiError('INVALID_JOB', 400, 'Expected the body to be a JSON object but received an empty body');
  let forbidden: string | undefined;
  let value: unknown;
  try {
    value = JSON.parse(text, (key, v: unknown) => {
      if (FORBIDDEN_KEYS.has(key)) forbidden ??= key;
      return v;
    });
  } catch (err) {
    throw new ApiError('INVALID_JOB', 400, `Expected the body to be valid JSON but received invalid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (forbidden !== undefined) throw new ApiError('INVALID_JOB', 400, `Expected no key named ${JSON.stringify(forbidden)} in the body but received one`);
  return value;
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
