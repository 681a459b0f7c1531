/**
 * A job whose deliveries run out (its worker killed again and again) is settled by the gateway,
 * the process allowed to read the queue: under the shipped per-role users, the gateway reads the
 * job the captured max-deliveries advisory names, fails its task with the kind's code and one
 * refund, and removes the job. The worker's user may no longer read jobs by sequence
 * (test/gateway/nats-least-privilege.test.ts), so this path cannot be the worker's.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstream } from '@nats-io/jetstream';
import { afterAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../worker/helpers/jetstream.js';
import { useGatewayE2e } from './e2e-harness.js';

/** The customer's webhook receiver: every delivery's body, in order. */
const hooks: { id?: string; status?: string }[] = [];
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    hooks.push((JSON.parse(body) as { data?: { id?: string; status?: string } }).data ?? {});
    res.writeHead(200).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
afterAll(() => new Promise<void>((resolve) => receiver.close(() => resolve())));

const e2e = useGatewayE2e({
  name: 'media-gateway-exhausted-',
  files: () => Promise.resolve({}),
  // Deliveries run out within seconds: two of one second each.
  env: {
    WORKER_ACK_WAIT_MS: '1000',
    WORKER_HEARTBEAT_MS: '200',
    WORKER_MAX_DELIVER: '2',
    GATEWAY_WEBHOOK_ALLOW_LOOPBACK: 'true',
  },
});

async function balance(key: string): Promise<number> {
  return Number((await e2e.api('GET', '/api/v1/balance', key)).body.data?.['credits']);
}

describe('a job that exhausted its deliveries', () => {
  it('fails its task with GENERATION_FAILED and one refund, sends its webhook once, and leaves the queue; the worker publishes nothing', async () => {
    const account = await e2e.newAccount(100);
    const submitted = await e2e.api('POST', '/api/v1/generate', account.key, {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'lost' },
      webhook_url: `${receiverUrl}/hook`,
    });
    expect(submitted.status).toBe(200);
    const id = submitted.body.data?.id ?? '';
    expect(await balance(account.key)).toBe(85);
    // A music worker that takes the job and dies, twice (the harness's serve runs no music): pull
    // and never answer, until the server has no delivery left and captures its advisory.
    const consumer = await jetstream(e2e.cp.nc).consumers.get('MEDIA_JOBS', 'media-worker-music');
    let delivered = 0;
    await waitFor(
      'the deliveries to run out',
      async () => {
        const msg = await consumer.next({ expires: 1000 });
        if (msg !== null) delivered = Math.max(delivered, msg.info.deliveryCount);
        return (await e2e.api('GET', `/api/v1/tasks/${id}`, account.key)).body.data?.['status'] === 'failed';
      },
      30_000,
    );
    expect(delivered).toBe(2);
    const task = (await e2e.api('GET', `/api/v1/tasks/${id}`, account.key)).body.data;
    expect(task).toMatchObject({
      status: 'failed',
      creditsRefunded: 15,
      error: { code: 'GENERATION_FAILED', message: 'No worker finished the job in 2 deliveries' },
    });
    await waitFor('the exhausted job to be removed', async () => (await e2e.cp.jobsInQueue()) === 0);
    expect(await balance(account.key)).toBe(100);
    expect(await e2e.cp.eventsOf(id)).toEqual([]);
    const metrics = await (await fetch(`${e2e.gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/media_gateway_exhausted_jobs_total\{outcome="failed"\} 1/);
    // The customer hears of the failure once: the task's webhook, delivered, and no second post.
    await waitFor(
      'the failure webhook to be delivered',
      async () =>
        (
          (await e2e.api('GET', `/api/v1/tasks/${id}`, account.key)).body.data?.['webhook'] as
            { status?: string } | undefined
        )?.status === 'delivered',
    );
    expect(hooks).toEqual([expect.objectContaining({ id, status: 'failed' })]);
  });
});
