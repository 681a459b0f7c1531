/**
 * The receiver snippets of docs/contract/delivery.md ("Webhooks"), run as written: Node imports the
 * block, python3 executes it (standard library only, no network). Each must accept the Standard
 * Webhooks reference example and requests the gateway's signing makes (one secret, or two during a
 * rotation), and refuse a changed body, a wrong secret, an old or future timestamp, and one that is
 * not a whole number of seconds (issue 38, item 7): signed correctly, such a timestamp must still be
 * refused, or a captured request re-split at its dots is replayed at any age.
 */
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { newWebhookSecret, secretKey, webhookHeaders } from '../../../src/gateway/webhooks/signing.js';

const REFERENCE = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  headers: {
    'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    'webhook-timestamp': '1614265330',
    'webhook-signature': 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  },
  body: '{"test": 2432232314}',
};
const FOREVER = 10 ** 12;

async function snippet(marker: string): Promise<string> {
  const doc = await readFile(path.join(PACKAGE_ROOT, 'docs', 'contract', 'delivery.md'), 'utf8');
  const match = new RegExp(`<!-- ${marker} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\\n\`\`\``).exec(doc);
  if (match === null) throw new Error(`No ${marker} block in docs/contract/delivery.md`);
  return match[1]!;
}

interface Case {
  name: string;
  secret: string;
  headers: Record<string, string>;
  body: string;
  tolerance: number;
  valid: boolean;
}

/** Headers signed over the timestamp exactly as written (the gateway itself writes only integers). */
function signedAs(secret: string, id: string, timestamp: string, body: string): Record<string, string> {
  const signature = createHmac('sha256', secretKey(secret)).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}

/** What an attacker makes of a captured request: the signed `id.timestamp.body` split at other dots. */
function resplit(headers: Record<string, string>, body: string): { headers: Record<string, string>; body: string } {
  const dot = body.indexOf('.');
  return {
    headers: {
      ...headers,
      'webhook-id': `${headers['webhook-id']}.${headers['webhook-timestamp']}`,
      'webhook-timestamp': body.slice(0, dot),
    },
    body: body.slice(dot + 1),
  };
}

function cases(): Case[] {
  const now = Math.floor(Date.now() / 1000);
  const current = newWebhookSecret();
  const previous = newWebhookSecret();
  const body = JSON.stringify({ success: true, data: { id: 't_x', status: 'completed', note: 'ünïcode' } });
  const rotated = webhookHeaders([current, previous], 'msg_t_x_completed', now, body);
  const dotted = JSON.stringify({ success: true, data: { id: 't_x', price: 1.5 } });
  return [
    { name: 'reference example', ...REFERENCE, tolerance: FOREVER, valid: true },
    { name: 'reference example, too old', ...REFERENCE, tolerance: 300, valid: false },
    {
      name: 'reference example, body changed',
      ...REFERENCE,
      body: '{"test": 2432232315}',
      tolerance: FOREVER,
      valid: false,
    },
    { name: 'rotation: the new secret', secret: current, headers: rotated, body, tolerance: 300, valid: true },
    { name: 'rotation: the old secret', secret: previous, headers: rotated, body, tolerance: 300, valid: true },
    { name: 'another secret', secret: newWebhookSecret(), headers: rotated, body, tolerance: 300, valid: false },
    // A captured request re-split at its dots: the signature still matches, the timestamp is `{"success":true,"data":{"id":"t_x","price":1`.
    {
      name: 're-split under a new webhook-id',
      secret: current,
      ...resplit(webhookHeaders([current], 'msg_t_x_completed', now, dotted), dotted),
      tolerance: 300,
      valid: false,
    },
    {
      name: 'signed an hour ago',
      secret: current,
      headers: webhookHeaders([current], 'msg_old', now - 3600, body),
      body,
      tolerance: 300,
      valid: false,
    },
    {
      name: 'signed an hour ahead',
      secret: current,
      headers: webhookHeaders([current], 'msg_new', now + 3600, body),
      body,
      tolerance: 300,
      valid: false,
    },
    // Signed correctly over each, with a tolerance that never ends: only the timestamp's form refuses them.
    ...[
      '12a',
      '1e9',
      'NaN',
      '',
      'Infinity',
      '0x6037',
      ` ${now}`,
      `+${now}`,
      `${now}.0`,
      `${now}\n`,
      '1_614_265_330',
      '١٦١٤٢٦٥٣٣٠',
    ].map((timestamp) => ({
      name: `timestamp ${JSON.stringify(timestamp)}`,
      secret: current,
      headers: signedAs(current, 'msg_ts', timestamp, body),
      body,
      tolerance: FOREVER,
      valid: false,
    })),
    {
      name: 'timestamp written by hand, whole seconds',
      secret: current,
      headers: signedAs(current, 'msg_ts', String(now), body),
      body,
      tolerance: 300,
      valid: true,
    },
  ];
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'webhook-snippets-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the receiver snippets of docs/contract/delivery.md', () => {
  it('Node: accepts what is signed, refuses the rest', async () => {
    const file = path.join(dir, 'verify.mjs');
    await writeFile(file, await snippet('webhook-verify-node'));
    const { verifyWebhook } = (await import(pathToFileURL(file).href)) as {
      verifyWebhook: (s: string, h: Record<string, string>, b: string, t: number) => boolean;
    };
    for (const c of cases()) expect(verifyWebhook(c.secret, c.headers, c.body, c.tolerance), c.name).toBe(c.valid);
  });

  it('Python: accepts what is signed, refuses the rest', async () => {
    const file = path.join(dir, 'verify.py');
    const all = cases();
    const harness = [
      await snippet('webhook-verify-python'),
      'import json, sys',
      'for c in json.loads(sys.argv[1]):',
      '    print(json.dumps(verify_webhook(c["secret"], c["headers"], c["body"].encode(), c["tolerance"])))',
    ].join('\n');
    await writeFile(file, harness);
    const { stdout } = await promisify(execFile)('python3', [file, JSON.stringify(all)]);
    expect(
      stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as boolean),
    ).toEqual(all.map((c) => c.valid));
  });
});
