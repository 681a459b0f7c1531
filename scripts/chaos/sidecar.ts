/**
 * Runs beside a gateway inside its network namespace (scripts/chaos-partitions.ts):
 *
 * - the webhook receiver: `http://127.0.0.1:<sink port>/hook` (the gateway sends webhooks to
 *   loopback only in development), each delivery appended to a JSON-lines file;
 * - the gateway's links to the nats nodes: 127.0.0.1:<14221+i> forwards to node i, adding a delay
 *   to every chunk in both directions when told (`POST /delay?ms=500` on the control port), since
 *   this kernel may lack netem. The order of bytes is kept; nothing is dropped here (loss is made by
 *   iptables on the namespace's link).
 *
 *   node dist/scripts/chaos/sidecar.js --sink-port 9100 --sink-file f.jsonl --control 10.213.0.11:7000 --nodes 10.213.0.1:4222,... [--proxy-base-port 14221]
 */
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import net from 'node:net';
import { parseArgs } from 'node:util';
import { sleep } from '../../src/sleep.js';

const { values } = parseArgs({
  options: {
    'sink-port': { type: 'string', default: '9100' },
    'sink-file': { type: 'string' },
    control: { type: 'string' },
    nodes: { type: 'string' },
    'proxy-base-port': { type: 'string', default: '14221' },
  },
});

let delayMs = 0;

/** Copies `from` to `to`, each chunk `delayMs` late (the delay in force when it arrived), in order. */
function pipeDelayed(from: net.Socket, to: net.Socket): void {
  let chain = Promise.resolve();
  from.on('data', (chunk: Buffer) => {
    const due = Date.now() + delayMs;
    chain = chain.then(async () => {
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      if (!to.destroyed) to.write(chunk);
    });
  });
  from.on('end', () => void chain.then(() => to.end()));
  from.on('error', () => to.destroy());
  from.on('close', () => void chain.then(() => to.destroy()));
}

for (const [i, target] of (values.nodes ?? '').split(',').filter(Boolean).entries()) {
  const [host, port] = target.split(':') as [string, string];
  net
    .createServer((client) => {
      const upstream = net.connect(Number(port), host);
      pipeDelayed(client, upstream);
      pipeDelayed(upstream, client);
    })
    .listen(Number(values['proxy-base-port']) + i, '127.0.0.1');
}

const sinkFile = values['sink-file'];
createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    if (sinkFile !== undefined)
      appendFileSync(sinkFile, `${JSON.stringify({ at: Date.now(), id: req.headers['webhook-id'], body })}\n`);
    res.writeHead(200).end('ok');
  });
}).listen(Number(values['sink-port']), '127.0.0.1');

if (values.control !== undefined) {
  const [host, port] = values.control.split(':') as [string, string];
  createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://sidecar');
    if (url.pathname === '/delay') delayMs = Number(url.searchParams.get('ms') ?? '0');
    res.writeHead(200).end(JSON.stringify({ delayMs }));
  }).listen(Number(port), host);
}
process.stdout.write('sidecar ready\n');
