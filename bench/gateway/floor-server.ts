/**
 * The architecture's floor for a poll, run by bench/gateway/gateway.ts beside the gateway: a bare Fastify
 * route that answers GET /tasks/:id with one NATS direct get of the task's record, and nothing
 * else (no authentication, rate limits, validation or logging). A gateway that reads the store
 * for each poll cannot beat it; one answering from memory may.
 * Environment: NATS_URL, FLOOR_STREAM (the tasks stream), FLOOR_SUBJECT_PREFIX (`<p>.tasks.<account>.`).
 * Prints `floor listening <url>` once ready.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import Fastify from 'fastify';

const stream = process.env['FLOOR_STREAM'] ?? 'GATEWAY_TASKS';
const prefix = process.env['FLOOR_SUBJECT_PREFIX'] ?? '';
const nc = await connect({ servers: process.env['NATS_URL'] ?? 'nats://127.0.0.1:4222' });
const jsm = await jetstreamManager(nc);
const app = Fastify({ logger: false });
app.get('/tasks/:id', async (req, reply) => {
  const { id } = req.params as { id: string };
  const msg = await jsm.direct.getMessage(stream, { last_by_subj: `${prefix}${id}` });
  if (msg === null) return reply.code(404).send({ success: false });
  return { success: true, data: msg.json() };
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`floor listening ${url}\n`);
process.once('SIGTERM', () => {
  void app.close().then(() => nc.close());
});
