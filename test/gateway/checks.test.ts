/**
 * What the gateway checks itself (issue 31): a worker's quote against the one pricing module, a
 * completed result against the task's own results folder, the JSON nesting scan, and the settings
 * that fail closed (served files without a link secret or a public address, a proxy trusting
 * everyone). Pure: table-driven, no network.
 */
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan, parseJsonBody } from '../../src/gateway/http/json-body.js';
import { checkQuote } from '../../src/gateway/worker-clients/quote-check.js';
import { checkResult, refusedResult, resultCheck, taskResultsPrefix } from '../../src/gateway/results/result-check.js';
import type { SecurityEventReporter } from '../../src/gateway/monitoring/security-events.js';
import { gatewaySettingsFromEnv, parseGatewaySettings } from '../../src/gateway/settings.js';
import { withSignedLinks } from '../../src/gateway/api-views.js';
import { linkSigner } from '../../src/gateway/results/links.js';
import { parseJob } from '../../src/jobs/index.js';
import type { TerminalEvent } from '../../src/protocol/index.js';
import type { TaskRecord } from '../../src/gateway/store/records.js';

const image = parseJob({
  model: 'vendor-image-upscale',
  input: { image_url: 'https://m.test/a.png', upscale_factor: '2' },
});
const imageQuote = {
  model: 'vendor-image-upscale',
  creditsUsed: 20,
  input: { image_url: 'https://m.test/a.png', upscale_factor: '2', detected_dimensions: '40×27', output_tier: '24mp' },
};
const video = parseJob({
  model: 'vendor-video-upscale',
  input: { video_url: 'https://m.test/v.mp4', upscale_factor: '4' },
});
const videoQuote = {
  model: 'vendor-video-upscale',
  creditsUsed: 13 * 28,
  input: {
    video_url: 'https://m.test/v.mp4',
    upscale_factor: '4',
    detected_duration: '12.5s',
    billed_seconds: 13,
    credits_per_second: 28,
  },
  measured: { video: { from: 'streams' } },
};
const lipsync = parseJob({
  model: 'vendor-lipsync-2',
  input: { video_url: 'https://m.test/v.mp4', audio_url: 'https://m.test/a.mp3' },
});
const lipsyncQuote = {
  model: 'vendor-lipsync-2',
  creditsUsed: 151,
  duration: 15.04,
  input: {
    video_url: 'https://m.test/v.mp4',
    audio_url: 'https://m.test/a.mp3',
    sync_mode: 'cut_off',
    active_speaker: false,
    model: 'vendor-lipsync-2',
    billed_seconds: 16,
    credits_per_second: 10,
  },
  measured: { video: { from: 'streams' }, audio: { from: 'streams' } },
};
const music = parseJob({ model: 'vendor-v5-generate-music', input: { prompt: 'calm piano' } });
const musicQuote = {
  model: 'vendor-v5-generate-music',
  creditsUsed: 15,
  input: { custom_mode: false, prompt: 'calm piano', instrumental: false },
};

describe('the quote check', () => {
  it('passes honest quotes of every kind', () => {
    expect(checkQuote(image, imageQuote)).toEqual({ ok: true, input: imageQuote.input });
    expect(
      checkQuote(image, {
        ...imageQuote,
        creditsUsed: 40,
        input: { ...imageQuote.input, detected_dimensions: '3000×3000', output_tier: '48mp' },
      }),
    ).toMatchObject({ ok: true });
    expect(checkQuote(video, videoQuote)).toEqual({ ok: true, input: videoQuote.input });
    expect(checkQuote(lipsync, { ...lipsyncQuote, creditsUsed: 160, duration: 15.04 })).toMatchObject({ ok: true });
    expect(checkQuote(music, musicQuote)).toEqual({ ok: true, input: musicQuote.input });
  });

  it('keeps of the echo only the fields it checked (it is shown to the customer)', () => {
    const added = { ...imageQuote, input: { ...imageQuote.input, notice: 'Pay at https://evil.example/' } };
    expect(checkQuote(image, added)).toEqual({ ok: true, input: imageQuote.input });
  });

  it.each([
    [
      'a price above the list',
      image,
      { ...imageQuote, creditsUsed: 900 },
      /creditsUsed is 900 where the price list gives 20/,
    ],
    ['a price below the list', image, { ...imageQuote, creditsUsed: 1 }, /creditsUsed is 1/],
    [
      "a tier that is not the size's",
      image,
      { ...imageQuote, input: { ...imageQuote.input, output_tier: '96mp' } },
      /output_tier/,
    ],
    [
      'another image URL',
      image,
      { ...imageQuote, input: { ...imageQuote.input, image_url: 'https://m.test/b.png' } },
      /^its image_url is not the job's$/,
    ],
    ['another factor', image, { ...imageQuote, input: { ...imageQuote.input, upscale_factor: '4' } }, /upscale_factor/],
    [
      'unreadable dimensions',
      image,
      { ...imageQuote, input: { ...imageQuote.input, detected_dimensions: '40x27' } },
      /detected_dimensions/,
    ],
    [
      'a size the price list refuses',
      image,
      { ...imageQuote, input: { ...imageQuote.input, detected_dimensions: '99999×99999' } },
      /OUTPUT_TOO_LARGE/,
    ],
    ['another model', image, videoQuote, /not a quote of this model/],
    [
      'video billed seconds off',
      video,
      { ...videoQuote, input: { ...videoQuote.input, billed_seconds: 12 } },
      /billed_seconds/,
    ],
    [
      'video over the limit',
      video,
      { ...videoQuote, input: { ...videoQuote.input, detected_duration: '61s' } },
      /VIDEO_TOO_LONG/,
    ],
    [
      'lip-sync priced for another duration',
      lipsync,
      { ...lipsyncQuote, creditsUsed: 50 },
      /creditsUsed is 50 where the price list gives 160/,
    ],
    [
      'lip-sync of another model',
      lipsync,
      { ...lipsyncQuote, model: 'vendor-lipsync-3', input: { ...lipsyncQuote.input, model: 'vendor-lipsync-3' } },
      /model/,
    ],
    [
      'music at another price',
      music,
      { ...musicQuote, creditsUsed: 0 },
      /creditsUsed is 0 where the price list gives 15/,
    ],
    ['no quote at all', music, null, /not a quote/],
  ])('refuses %s', (_what, job, quote, reason) => {
    const verdict = checkQuote(job, quote);
    expect(verdict.ok).toBe(false);
    expect(verdict.ok ? '' : verdict.reason).toMatch(reason);
  });
});

const BASE = 'https://cdn.test/results/';
const task = { id: 't_abc', kind: 'image' as const, model: 'vendor-image-upscale' };
const completed = (result: unknown, model = 'vendor-image-upscale'): TerminalEvent => ({
  id: 't_abc',
  model,
  status: 'completed',
  result,
  creditsUsed: 20,
  createdAt: '2026-01-01T00:00:00.000Z',
  startedAt: null,
  finishedAt: '2026-01-01T00:00:01.000Z',
  durationMs: 1000,
  attempt: 1,
  worker: 'w',
});
const imageResult = (url: string) => ({ url, type: 'image', width: 80, height: 54, format: 'png' });
/** The event as a worker of protocol 2.1 sends it: each URL of the result with its stored file. */
const withFiles = (event: TerminalEvent, kind: string, urls: string[]): TerminalEvent => ({
  ...event,
  files: urls.map((url) => ({
    key: `${kind}/${event.id}/${url.slice(url.lastIndexOf('/') + 1)}`,
    url,
    size: 10,
    sha256: 'a'.repeat(64),
  })),
});
const OWN = `${BASE}image/t_abc/output.png`;

describe('the result check', () => {
  it("passes a result under the task's own folder, of every kind", () => {
    expect(taskResultsPrefix(BASE, 'image', 't_abc')).toBe('https://cdn.test/results/image/t_abc/');
    expect(checkResult(withFiles(completed(imageResult(OWN)), 'image', [OWN]), task, BASE)).toEqual({ ok: true });
    const song = (n: number) => ({
      audio_url: `${BASE}music/t_m/song-${n}.mp3`,
      image_url: `${BASE}music/t_m/cover-${n}.jpg`,
      duration: 30,
      title: 'https://evil.example/ in a title is text',
      tags: '',
      prompt: '',
    });
    const musicTask = { id: 't_m', kind: 'music' as const, model: 'vendor-v5-generate-music' };
    const songs = [song(1), song(2)];
    const musicEvent = withFiles(
      { ...completed({ songs }, 'vendor/generate-music'), id: 't_m' },
      'music',
      songs.flatMap((s) => [s.audio_url, s.image_url]),
    );
    expect(checkResult(musicEvent, musicTask, BASE)).toEqual({ ok: true });
    const local = 'file:///srv/results/image/t_abc/output.png';
    expect(
      checkResult(withFiles(completed(imageResult(local)), 'image', [local]), task, 'file:///srv/results'),
    ).toEqual({ ok: true });
    const bucket = 's3://results-bucket/results/image/t_abc/output.png';
    expect(
      checkResult(withFiles(completed(imageResult(bucket)), 'image', [bucket]), task, 's3://results-bucket/results/'),
    ).toEqual({ ok: true });
  });

  it.each([
    [
      'no list of stored files (a worker before protocol 2.1)',
      (e: TerminalEvent) => ({ ...e, files: undefined }),
      /no stored files/,
    ],
    [
      'a file more than the result names',
      (e: TerminalEvent) => ({
        ...e,
        files: [
          ...(e.files ?? []),
          { key: 'image/t_abc/extra.png', url: `${BASE}image/t_abc/extra.png`, size: 1, sha256: 'b'.repeat(64) },
        ],
      }),
      /2 files for a result of 1/,
    ],
    [
      "another file in place of the result's",
      (e: TerminalEvent) => ({
        ...e,
        files: [{ key: 'image/t_abc/other.png', url: `${BASE}image/t_abc/other.png`, size: 1, sha256: 'b'.repeat(64) }],
      }),
      /no stored file for/,
    ],
    [
      "another task's key",
      (e: TerminalEvent) => ({ ...e, files: (e.files ?? []).map((f) => ({ ...f, key: 'image/t_victim/output.png' })) }),
      /under the key/,
    ],
  ])('refuses a result with %s', (_what, change, reason) => {
    const verdict = checkResult(change(withFiles(completed(imageResult(OWN)), 'image', [OWN])), task, BASE);
    expect(verdict.ok ? '' : verdict.reason).toMatch(reason);
  });

  it('refuses, with a refund, a result whose stored copy is not what the event says, and leaves the event unsettled when the store cannot be asked', async () => {
    const reported: string[] = [];
    const security = ((_kind: string, _fields: unknown, message: string) =>
      reported.push(message)) as unknown as SecurityEventReporter;
    const event = withFiles(completed(imageResult(OWN)), 'image', [OWN]);
    await expect(resultCheck(BASE, security, () => Promise.resolve(null))(event, task)).resolves.toBe(event);
    const refused = await resultCheck(BASE, security, (f) => Promise.resolve(`${f.key} is not in the bucket`))(
      event,
      task,
    );
    expect(refused).toMatchObject({ status: 'failed', refund: true, error: { code: 'UPSCALE_FAILED' } });
    expect(reported).toEqual([expect.stringMatching(/image\/t_abc\/output.png is not in the bucket/)]);
    await expect(
      resultCheck(BASE, security, () => Promise.reject(new Error('connect ECONNREFUSED')))(event, task),
    ).rejects.toThrow(/ECONNREFUSED/);
  });

  it.each([
    ['another host', imageResult('https://evil.example/your-upscale.exe')],
    ["another task's result", imageResult(`${BASE}image/t_victim/output.png`)],
    ['an upload', imageResult(`${BASE}uploads/acct_x/u_1.png`)],
    ['a path that climbs out', imageResult(`${BASE}image/t_abc/../t_victim/output.png`)],
    ['an encoded climb', imageResult(`${BASE}image/t_abc/..%2Ft_victim%2Foutput.png`)],
    ['a deeper path', imageResult(`${BASE}image/t_abc/x/output.png`)],
    ['a query', imageResult(`${BASE}image/t_abc/output.png?expires=9999999999&sig=x`)],
    ['a prefix of another task id', imageResult(`${BASE}image/t_abcd/output.png`)],
    ["another kind's folder", imageResult(`${BASE}music/t_abc/output.png`)],
    ['another shape', { url: `${BASE}image/t_abc/output.png` }],
  ])('refuses %s', (_what, result) => {
    expect(checkResult(completed(result), task, BASE).ok).toBe(false);
  });

  it("refuses an event whose model is not the task's, and a refusal is a refunded failure", () => {
    expect(
      checkResult(completed(imageResult(`${BASE}image/t_abc/output.png`), 'vendor-video-upscale'), task, BASE).ok,
    ).toBe(false);
    const refused = refusedResult(completed(imageResult('https://evil.example/x')), 'image');
    expect(refused).toMatchObject({ status: 'failed', result: null, refund: true, error: { code: 'UPSCALE_FAILED' } });
  });

  it("signs only URLs under the task's own folder, whatever else a stored result holds", () => {
    const signer = linkSigner('x'.repeat(32));
    const record: TaskRecord = {
      ...{
        id: 't_abc',
        accountId: 'a',
        model: 'vendor-image-upscale',
        kind: 'image',
        creditsUsed: 20,
        createdAt: '2026-01-01T00:00:00.000Z',
        debitSeq: 1,
        extras: {},
      },
      status: 'completed',
      finishedAt: '2026-01-01T00:00:01.000Z',
    };
    const view = {
      result: {
        own: `${BASE}image/t_abc/output.png`,
        other: `${BASE}image/t_victim/output.png`,
        upload: `${BASE}uploads/a/u_1.png`,
      },
    };
    const shown = withSignedLinks(view, record, { signer, base: BASE, upscaleResultLifetimeDays: 7 })[
      'result'
    ] as Record<string, string>;
    expect(shown['own']).toMatch(/\?expires=\d+&sig=/);
    expect(shown['other']).toBe(view.result.other);
    expect(shown['upload']).toBe(view.result.upload);
  });
});

describe('JSON bodies', () => {
  it('refuses nesting deeper than 16 before parsing, counting outside strings only', () => {
    expect(nestsDeeperThan('['.repeat(17), 16)).toBe(true);
    expect(nestsDeeperThan(`${'['.repeat(16)}${']'.repeat(16)}`, 16)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ a: '['.repeat(100), b: '\\"[[[[' }), 2)).toBe(false);
    expect(() => parseJsonBody('['.repeat(100_000))).toThrow(
      'Expected JSON nested at most 16 levels deep but received deeper nesting',
    );
    expect(parseJsonBody('{"model":"x","input":{"a":[1,[2]]}}')).toEqual({ model: 'x', input: { a: [1, [2]] } });
    // Forbidden keys at any depth, escaped or not, found after parsing (no reviver: it costs 40x on wide arrays).
    for (const body of ['{"a":[{"\\u005f_proto__":1}]}', '[{"b":{"prototype":2}}]', '{"constructor":1}']) {
      expect(() => parseJsonBody(body)).toThrow(
        /^Expected no key named "(__proto__|prototype|constructor)" in the body but received one$/,
      );
    }
    expect(parseJsonBody('{"c":"__proto__"}')).toEqual({ c: '__proto__' });
  });
});

describe('gateway settings that fail closed', () => {
  const secret = 's'.repeat(32);
  it('refuses serving files without a link secret or a public address, naming the settings', () => {
    expect(() => gatewaySettingsFromEnv({ GATEWAY_SERVE_RESULTS: 'true' })).toThrow(
      'Invalid setting GATEWAY_SERVE_RESULTS: Expected GATEWAY_LINK_SECRET and RESULTS_BASE_URL or GATEWAY_PUBLIC_URL to be set with GATEWAY_SERVE_RESULTS=true',
    );
    expect(() =>
      gatewaySettingsFromEnv({
        GATEWAY_SERVE_RESULTS: 'true',
        GATEWAY_UPLOADS: 'true',
        RESULTS_BASE_URL: 'http://127.0.0.1:8080/results/',
      }),
    ).toThrow(/Expected GATEWAY_LINK_SECRET to be set with GATEWAY_SERVE_RESULTS=true and GATEWAY_UPLOADS=true/);
    expect(() => gatewaySettingsFromEnv({ GATEWAY_SERVE_RESULTS: 'true', GATEWAY_LINK_SECRET: secret })).toThrow(
      /Expected RESULTS_BASE_URL or GATEWAY_PUBLIC_URL to be set/,
    );
    expect(
      gatewaySettingsFromEnv({
        GATEWAY_SERVE_RESULTS: 'true',
        GATEWAY_LINK_SECRET: secret,
        GATEWAY_PUBLIC_URL: 'https://api.test',
      }).serveResults,
    ).toBe(true);
    expect(gatewaySettingsFromEnv({}).serveResults).toBe(false);
  });

  it('takes proxies as addresses, CIDRs or a hop count, and refuses trusting everyone', () => {
    expect(parseGatewaySettings({}).trustProxy).toBe(false);
    expect(parseGatewaySettings({ trustProxy: '1' }).trustProxy).toBe(1);
    expect(parseGatewaySettings({ trustProxy: '0' }).trustProxy).toBe(false);
    expect(parseGatewaySettings({ trustProxy: '10.0.0.5, 10.1.0.0/16,fd00::/8,loopback' }).trustProxy).toEqual([
      '10.0.0.5',
      '10.1.0.0/16',
      'fd00::/8',
      'loopback',
    ]);
    expect(() => parseGatewaySettings({ trustProxy: 'true' })).toThrow(
      /Invalid setting GATEWAY_TRUST_PROXY: .*every address/,
    );
    expect(() => parseGatewaySettings({ trustProxy: '0.0.0.0/0' })).toThrow(/a \/0 range trusts every address/);
    expect(() => parseGatewaySettings({ trustProxy: '10.0.0.300' })).toThrow(/is no address or CIDR/);
  });
});
