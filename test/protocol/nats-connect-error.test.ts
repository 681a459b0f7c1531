/**
 * A first connection to NATS that fails names the servers of NATS_URL without the password or token
 * written into them: the message is printed at start-up and logged.
 */
import { describe, expect, it } from 'vitest';
import { connectNats, parseProtocolSettings } from '../../src/protocol/index.js';
import { explainConnectError } from '../../src/protocol/nats-connect-error.js';
import { closedPort } from '../helpers/s3-server.js';

describe('a failed first connection to NATS', () => {
  it('names the servers without the password of NATS_URL (a real refused connection)', async () => {
    const port = await closedPort();
    const settings = parseProtocolSettings({ natsUrl: `nats://alice:pa55word@127.0.0.1:${port}` });
    const err = await connectNats(settings).then(
      () => new Error('connected to a closed port'),
      (e: unknown) => e as Error,
    );
    expect(err.message).toContain(`Could not connect to NATS at nats://alice:***@127.0.0.1:${port} (NATS_URL)`);
    expect(err.message).not.toContain('pa55word');
  });

  it('names them without it when the server refuses the credentials or the TLS does not fit', () => {
    const urls = 'nats://t0ken@a:4222,nats://bob:hunter2@b:4222';
    const refused = Object.assign(new Error('Authorization Violation'), { name: 'AuthorizationError' });
    const tls = Object.assign(new Error('self-signed certificate'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' });
    const messages = [explainConnectError(refused, urls, {}), explainConnectError(tls, urls, {})].map((e) => e.message);
    expect(messages[0]).toMatch(/^NATS at nats:\/\/\*\*\*@a:4222,nats:\/\/bob:\*\*\*@b:4222 refused /);
    expect(messages[1]).toMatch(/^TLS with NATS at nats:\/\/\*\*\*@a:4222,nats:\/\/bob:\*\*\*@b:4222 failed /);
    for (const message of messages) expect(message).not.toMatch(/t0ken|hunter2/);
  });
});
