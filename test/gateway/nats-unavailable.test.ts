/** NATS failures told apart: not answering (503) versus refusing or a bug (500). */
import { errors } from '@nats-io/transport-node';
import { JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { toApiError } from '../../src/gateway/errors.js';
import { isNatsUnavailable } from '../../src/gateway/nats-unavailable.js';

const noResponders = new errors.RequestError('no responders', {
  cause: new errors.NoRespondersError('$JS.API.STREAM.INFO.X'),
});
const noLeader = new JetStreamApiError({
  code: 503,
  err_code: 10008,
  description: 'JetStream system temporarily unavailable',
});
const refused = new JetStreamApiError({ code: 400, err_code: 10071, description: 'wrong last sequence: 3' });

describe('isNatsUnavailable', () => {
  it('a timeout, no responders, no stream leader and a closed connection are NATS not answering, also when wrapped', () => {
    for (const err of [
      new errors.TimeoutError(),
      noResponders,
      noLeader,
      new errors.ClosedConnectionError(),
      new Error('wrapped', { cause: noLeader }),
    ]) {
      expect(isNatsUnavailable(err)).toBe(true);
    }
  });

  it('a refusal or a plain bug is not', () => {
    for (const err of [refused, new TypeError('x is undefined'), 'a string'])
      expect(isNatsUnavailable(err)).toBe(false);
  });

  it('maps to 503 SERVICE_UNAVAILABLE, anything else unknown to 500', () => {
    expect(toApiError(new errors.TimeoutError())).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(toApiError(new TypeError('x'))).toMatchObject({ status: 500, code: 'INTERNAL_ERROR' });
  });
});
