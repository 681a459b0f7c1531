/**
 * Settings' values as they are printed (`media-worker config`, an invalid setting's message, start-up
 * logs): passwords and tokens written into URLs hidden, the rest as written; secrets as `(set)`.
 */
import { describe, expect, it } from 'vitest';
import {
  httpUrl,
  nonEmptyText,
  parseSettings,
  redactCredentials,
  redactValue,
  setting,
  shownSetting,
  tableSchema,
} from '../src/settings-table.js';

describe('redactCredentials', () => {
  it.each([
    ['https://alice:pa55@sync.example/v2', 'https://alice:***@sync.example/v2'],
    ['https://alice:pa55@sync.example', 'https://alice:***@sync.example'],
    ['https://alice:@sync.example', 'https://alice:***@sync.example'],
    // A password holding "@" unencoded: the host is after the last one, as URL parsers read it.
    ['https://alice:p@ss@sync.example/', 'https://alice:***@sync.example/'],
    // A lone user part may be a token (NATS reads nats://TOKEN@host as one).
    ['nats://t0ken@nats.internal:4222', 'nats://***@nats.internal:4222'],
    ['nats://u:p1@a:4222,nats://u:p2@b:4222', 'nats://u:***@a:4222,nats://u:***@b:4222'],
    ['nats://u:p1@a:4222, nats://u:p2@b:4222', 'nats://u:***@a:4222, nats://u:***@b:4222'],
    // NATS_URL also takes servers without a scheme.
    ['u:p1@a:4222,b:4222', 'u:***@a:4222,b:4222'],
    [
      'https://bucket.s3.example/k?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc123&X-Amz-Expires=900',
      'https://bucket.s3.example/k?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Expires=900',
    ],
    ['https://hooks.example/cb?token=s3cret&task=1#top', 'https://hooks.example/cb?token=***&task=1#top'],
    ['https://blob.example/c?sv=2022&sig=abc%3D&api_key=k', 'https://blob.example/c?sv=2022&sig=***&api_key=***'],
    // The "@" of a path or query is no user part.
    ['https://sync.example/a@b?q=x@y', 'https://sync.example/a@b?q=x@y'],
  ])('%s -> %s', (value, shown) => {
    expect(redactCredentials(value)).toBe(shown);
  });

  it.each([
    'http://127.0.0.1:4318',
    'nats://127.0.0.1:4222',
    'media-worker@gpu-1',
    '/srv/results',
    'image=2,video=1',
    'https://sync.example/v2?model=lipsync-2',
  ])('leaves %s as it is', (value) => {
    expect(redactCredentials(value)).toBe(value);
  });

  it('redacts the strings inside a parsed value and keeps the rest', () => {
    expect(redactValue({ a: ['https://u:p@h', 2], b: { c: 'x:y@z' }, d: true, e: null })).toEqual({
      a: ['https://u:***@h', 2],
      b: { c: 'x:***@z' },
      d: true,
      e: null,
    });
  });
});

describe('shownSetting', () => {
  const url = setting({ env: 'SOME_URL', schema: nonEmptyText, doc: 'a URL' });
  const secret = setting({ env: 'SOME_TOKEN', schema: nonEmptyText, doc: 'a token', secret: true });

  it('shows a secret as whether it is set, never its value', () => {
    expect([shownSetting(secret, 'https://u:p@h'), shownSetting(secret, undefined)]).toEqual(['(set)', null]);
  });

  it("shows another setting with its URLs' credentials hidden, null when unset", () => {
    expect([shownSetting(url, 'https://u:p@h/x'), shownSetting(url, undefined)]).toEqual(['https://u:***@h/x', null]);
  });
});

describe('an invalid setting', () => {
  it('names the variable and quotes the value without its password', () => {
    const table = { base: setting({ env: 'SOME_BASE_URL', schema: httpUrl, doc: 'an http URL' }) };
    const parsed = parseSettings(table, tableSchema(table), { base: 'ftp://alice:pa55@files.example/' });
    expect(parsed).toEqual({
      ok: false,
      problems: [
        'Invalid setting SOME_BASE_URL: Expected an http or https URL but received "ftp://alice:***@files.example/"',
      ],
    });
  });
});
