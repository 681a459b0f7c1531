/**
 * The webhooks' pure parts: Standard Webhooks signatures against the specification's reference
 * example, the retry schedule's bounds, what an answer means, the URL and address rules.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  endpointOf,
  signingSecrets,
  webhookEvent,
  webhookId,
  withWebhookState,
  type WebhookAccount,
} from '../../../src/gateway/webhooks/records.js';
import {
  DEFAULT_RETRY_DELAYS_MS,
  MIN_RETRY_SPAN_MS,
  RETRY_AFTER_BOUNDS_MS,
  nextStep,
  retryAfterMs,
  retryDelayMs,
  shortestSpanMs,
} from '../../../src/gateway/webhooks/schedule.js';
import {
  isWebhookSecret,
  newWebhookSecret,
  secretKey,
  sign,
  signatureHeader,
  webhookHeaders,
} from '../../../src/gateway/webhooks/signing.js';
import { addressProblem, destinationProblem, parseWebhookUrl } from '../../../src/gateway/webhooks/target.js';
import { parseGatewaySettings } from '../../../src/gateway/settings.js';
import type { TaskRecord } from '../../../src/gateway/store/records.js';

// The reference example of the Standard Webhooks libraries' test suites.
const REFERENCE = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

describe('signing (Standard Webhooks v1)', () => {
  it('gives the reference signature for the reference message', () => {
    expect(sign(REFERENCE.secret, REFERENCE.id, REFERENCE.timestamp, REFERENCE.body)).toBe(REFERENCE.signature);
    expect(webhookHeaders([REFERENCE.secret], REFERENCE.id, REFERENCE.timestamp, REFERENCE.body)).toEqual({
      'webhook-id': REFERENCE.id,
      'webhook-timestamp': String(REFERENCE.timestamp),
      'webhook-signature': REFERENCE.signature,
    });
  });

  it('keys the HMAC with the base64-decoded secret, not the string', () => {
    expect(secretKey(REFERENCE.secret)).toEqual(Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64'));
    const withString = `v1,${createHmac('sha256', REFERENCE.secret).update(`${REFERENCE.id}.${REFERENCE.timestamp}.${REFERENCE.body}`).digest('base64')}`;
    expect(withString).not.toBe(REFERENCE.signature);
  });

  it('changes with any byte of the id, timestamp or body', () => {
    expect(sign(REFERENCE.secret, `${REFERENCE.id}x`, REFERENCE.timestamp, REFERENCE.body)).not.toBe(
      REFERENCE.signature,
    );
    expect(sign(REFERENCE.secret, REFERENCE.id, REFERENCE.timestamp + 1, REFERENCE.body)).not.toBe(REFERENCE.signature);
    expect(sign(REFERENCE.secret, REFERENCE.id, REFERENCE.timestamp, `${REFERENCE.body} `)).not.toBe(
      REFERENCE.signature,
    );
  });

  it('sends one signature per live secret, space-separated', () => {
    const other = newWebhookSecret();
    const header = signatureHeader([other, REFERENCE.secret], REFERENCE.id, REFERENCE.timestamp, REFERENCE.body);
    expect(header.split(' ')).toEqual([
      sign(other, REFERENCE.id, REFERENCE.timestamp, REFERENCE.body),
      REFERENCE.signature,
    ]);
  });

  it('makes whsec_ secrets of 24 random bytes, different each time', () => {
    const a = newWebhookSecret();
    expect(isWebhookSecret(a)).toBe(true);
    expect(secretKey(a)).toHaveLength(24);
    expect(newWebhookSecret()).not.toBe(a);
    expect(isWebhookSecret('whsec_')).toBe(false);
    expect(isWebhookSecret('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBe(false);
  });
});

describe('retry schedule', () => {
  it('retries for at least 24 h with every jitter at its lowest, and at most about 30 h at its highest', () => {
    expect(shortestSpanMs(DEFAULT_RETRY_DELAYS_MS)).toBeGreaterThanOrEqual(MIN_RETRY_SPAN_MS);
    const longest = DEFAULT_RETRY_DELAYS_MS.reduce(
      (sum, _d, i) => sum + retryDelayMs(DEFAULT_RETRY_DELAYS_MS, i + 1, () => 1)!,
      0,
    );
    expect(longest).toBeLessThanOrEqual(31 * 3600_000);
    const lowest = DEFAULT_RETRY_DELAYS_MS.reduce(
      (sum, _d, i) => sum + retryDelayMs(DEFAULT_RETRY_DELAYS_MS, i + 1, () => 0)!,
      0,
    );
    expect(lowest).toBeGreaterThanOrEqual(MIN_RETRY_SPAN_MS);
  });

  it('backs off: no delay is shorter than the one before, the first is seconds, the last hours', () => {
    for (let i = 1; i < DEFAULT_RETRY_DELAYS_MS.length; i++)
      expect(DEFAULT_RETRY_DELAYS_MS[i]!).toBeGreaterThanOrEqual(DEFAULT_RETRY_DELAYS_MS[i - 1]!);
    expect(DEFAULT_RETRY_DELAYS_MS[0]).toBeLessThanOrEqual(10_000);
    expect(DEFAULT_RETRY_DELAYS_MS.at(-1)).toBeGreaterThanOrEqual(3600_000);
  });

  it('jitters within ±10 % and ends after the last delay', () => {
    for (const r of [0, 0.25, 0.5, 0.999]) {
      const d = retryDelayMs([1000], 1, () => r)!;
      expect(d).toBeGreaterThanOrEqual(900);
      expect(d).toBeLessThanOrEqual(1100);
    }
    expect(retryDelayMs([1000], 2)).toBeNull();
  });

  it('reads Retry-After as seconds or a date, within bounds', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(retryAfterMs('0', now)).toBe(RETRY_AFTER_BOUNDS_MS.min);
    expect(retryAfterMs('9999999', now)).toBe(RETRY_AFTER_BOUNDS_MS.max);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });

  it('ends on any 2xx and on 410; waits Retry-After on 429 and 503 only; else the schedule', () => {
    const now = 0;
    const delays = [1000, 2000];
    for (const status of [200, 201, 204, 299])
      expect(nextStep({ status }, 1, delays, now)).toEqual({ action: 'done', status: 'delivered' });
    expect(nextStep({ status: 410 }, 1, delays, now)).toMatchObject({ action: 'done', status: 'failed', gone: true });
    expect(nextStep({ status: 429, retryAfter: '7' }, 1, delays, now)).toEqual({ action: 'retry', delayMs: 7000 });
    expect(nextStep({ status: 503, retryAfter: '7' }, 2, delays, now)).toEqual({ action: 'retry', delayMs: 7000 });
    expect(nextStep({ status: 500, retryAfter: '7' }, 1, delays, now, () => 0.5)).toEqual({
      action: 'retry',
      delayMs: 1000,
    });
    expect(nextStep({ status: 301 }, 2, delays, now, () => 0.5)).toEqual({ action: 'retry', delayMs: 2000 });
    expect(nextStep({}, 1, delays, now, () => 0.5)).toEqual({ action: 'retry', delayMs: 1000 });
    expect(nextStep({ status: 429, retryAfter: '7' }, 3, delays, now)).toMatchObject({
      action: 'done',
      status: 'failed',
      gone: false,
    });
  });

  it('a schedule shorter than 24 h is refused by the settings, naming the variable, unless loopback development is on', () => {
    expect(() => parseGatewaySettings({ webhookRetryDelaysMs: '1000,1000' })).toThrow(
      /GATEWAY_WEBHOOK_RETRY_DELAYS_MS.*at least 24 h/,
    );
    expect(() => parseGatewaySettings({ webhookRetryDelaysMs: '1000,x' })).toThrow(/GATEWAY_WEBHOOK_RETRY_DELAYS_MS/);
    expect(
      parseGatewaySettings({ webhookRetryDelaysMs: '1000,1000', webhookAllowLoopback: 'true' }).webhookRetryDelaysMs,
    ).toEqual([1000, 1000]);
    expect(parseGatewaySettings({}).webhookRetryDelaysMs).toEqual(DEFAULT_RETRY_DELAYS_MS);
    expect(parseGatewaySettings({}).webhookAllowLoopback).toBe(false);
  });
});

describe('where a webhook may go', () => {
  const strict = { allowLoopback: false };
  const dev = { allowLoopback: true };

  it('only https URLs without credentials (http too in loopback development)', () => {
    expect(parseWebhookUrl('https://hooks.example.com/x', strict)).toHaveProperty('url');
    expect(parseWebhookUrl('http://hooks.example.com/x', strict)).toEqual({
      problem: expect.stringMatching(/https URL but received a http: URL/),
    });
    expect(parseWebhookUrl('http://127.0.0.1:9/x', dev)).toHaveProperty('url');
    expect(parseWebhookUrl('ftp://hooks.example.com/x', dev)).toHaveProperty('problem');
    expect(parseWebhookUrl('https://u:p@hooks.example.com/x', strict)).toEqual({
      problem: expect.stringMatching(/credentials/),
    });
    expect(parseWebhookUrl(`https://h.example.com/${'a'.repeat(2100)}`, strict)).toHaveProperty('problem');
    expect(parseWebhookUrl(42, strict)).toHaveProperty('problem');
    expect(parseWebhookUrl('not a url', strict)).toHaveProperty('problem');
  });

  it("judges addresses by the job inputs' policy: private, loopback, link-local and metadata refused", () => {
    const u = new URL('https://hooks.example.com/');
    expect(addressProblem(u, '93.184.216.34', strict)).toBeNull();
    for (const a of [
      '10.0.0.1',
      '192.168.1.1',
      '127.0.0.1',
      '169.254.169.254',
      '::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '0.0.0.0',
    ]) {
      expect(addressProblem(u, a, strict), a).not.toBeNull();
    }
    // Loopback development lets loopback through, nothing else private; plain http only to loopback.
    expect(addressProblem(u, '127.0.0.1', dev)).toBeNull();
    expect(addressProblem(u, '10.0.0.1', dev)).not.toBeNull();
    expect(addressProblem(new URL('http://h.example.com/'), '93.184.216.34', dev)).toMatch(/only to loopback/);
  });

  it('resolves names and refuses a name with any forbidden answer', async () => {
    const resolve = async (host: string) =>
      host === 'mixed.example'
        ? [
            { address: '93.184.216.34', family: 4 as const },
            { address: '10.1.2.3', family: 4 as const },
          ]
        : [{ address: '93.184.216.34', family: 4 as const }];
    expect(await destinationProblem(new URL('https://ok.example/'), strict, resolve)).toBeNull();
    expect(await destinationProblem(new URL('https://mixed.example/'), strict, resolve)).toMatch(
      /mixed\.example resolves to 10\.1\.2\.3 is a private address/,
    );
    expect(await destinationProblem(new URL('https://[::1]/'), strict, resolve)).toMatch(/loopback/);
    expect(
      await destinationProblem(new URL('https://gone.example/'), strict, async () => {
        throw new Error('ENOTFOUND');
      }),
    ).toMatch(/does not resolve/);
  });
});

describe("a task's webhook", () => {
  const task = (over: Partial<TaskRecord>): TaskRecord => ({
    id: 't_1',
    accountId: 'acct_1',
    model: 'vendor-image-upscale',
    kind: 'image',
    status: 'completed',
    creditsUsed: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    debitSeq: 1,
    extras: { webhookUrl: 'https://h.example/' },
    ...over,
  });

  it('names its event from the terminal state, and its id from task and event', () => {
    expect(webhookEvent(task({}))).toBe('completed');
    expect(webhookEvent(task({ status: 'failed', error: { code: 'TASK_EXPIRED', message: '' } }))).toBe('expired');
    expect(webhookEvent(task({ status: 'failed', error: { code: 'CANCELLED', message: '' } }))).toBe('cancelled');
    expect(webhookEvent(task({ status: 'failed', error: { code: 'FETCH_FAILED', message: '' } }))).toBe('failed');
    expect(webhookEvent(task({ status: 'pending' }))).toBeNull();
    expect(webhookId('t_1', 'completed')).toBe('msg_t_1_completed');
  });

  it("goes to the task's own URL, else the account's default unless turned off", () => {
    const account: WebhookAccount = { secret: REFERENCE.secret, defaultUrl: 'https://default.example/' };
    expect(endpointOf(task({}), account)).toEqual({ url: 'https://h.example/', isDefault: false });
    expect(endpointOf(task({ extras: { webhookDefault: true } }), account)).toEqual({
      url: 'https://default.example/',
      isDefault: true,
    });
    expect(
      endpointOf(task({ extras: { webhookDefault: true } }), { ...account, defaultOffAt: '2026-01-01T00:00:00Z' }),
    ).toBeNull();
    expect(endpointOf(task({ extras: { webhookDefault: true } }), null)).toBeNull();
  });

  it("is signed by the replaced secret too while the rotation's overlap lasts", () => {
    const now = Date.parse('2026-01-02T00:00:00Z');
    const rotated: WebhookAccount = {
      secret: 'whsec_bmV3bmV3bmV3bmV3bmV3bmV3',
      previousSecret: REFERENCE.secret,
      previousUntil: '2026-01-02T12:00:00Z',
    };
    expect(signingSecrets(rotated, now)).toEqual([rotated.secret, REFERENCE.secret]);
    expect(signingSecrets(rotated, Date.parse('2026-01-02T12:00:01Z'))).toEqual([rotated.secret]);
  });

  it('shows its state on a settled task that has one, pending before the first attempt', () => {
    expect(withWebhookState({ id: 't_1' }, task({}), null)).toEqual({
      id: 't_1',
      webhook: { id: 'msg_t_1_completed', event: 'completed', status: 'pending', attempts: 0 },
    });
    expect(withWebhookState({ id: 't_1' }, task({ extras: {} }), null)).toEqual({ id: 't_1' });
    expect(withWebhookState({ id: 't_1' }, task({ status: 'pending' }), null)).toEqual({ id: 't_1' });
  });
});
