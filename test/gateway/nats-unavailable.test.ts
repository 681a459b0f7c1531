/** NATS failures told apart: not answering (503, maybe stored or certainly not) versus refusing (a bug: 500). */
import { errors } from '@nats-io/transport-node';
import { JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { toApiError } from '../../src/gateway/errors.js';
import { certainlyNotStored, isNatsUnavailable } from '../../src/gateway/nats-unavailable.js';

const noResponders = new errors.RequestError('no responders', { cause: new errors.NoRespondersError('$JS.API.STREAM.INFO.X') });
const noLeader = new JetStreamApiError({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' });
const refused = new JetStreamApiError({ code: 400, err_code: 10071, description: 'wrong last sequence: 3' });

describe('isNatsUnavailable and certainlyNotStored', () => {
  it('a timeout is unavailable but may have been stored; no responders, no leader and a closed connection certainly were not', () => {
    expect([isNatsUnavailable(new errors.TimeoutError()), certainlyNotStored(new errors.TimeoutError())]).toEqual([true, false]);
    for (const err of [noResponders, noLeader, new errors.ClosedConnectionError(), new Error('wrapped', { cause: noLeader })]) {
      expect([isNatsUnavailable(err), certainlyNotStored(err)]).toEqual([true, true]);
    }
  });

  it('a refusal or a plain bug is neither', () => {
    for (const err of [refused, new TypeError('x is undefined'), 'a string']) expect([isNatsUnavailable(err), certainlyNotStored(err)]).toEqual([false, false]);
  });

  it('maps to 503 SERVICE_UNAVAILABLE, anything else unknown to 500', () => {
    expect(toApiError(new errors.TimeoutError())).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    expect(toApiError(new TypeError('x'))).toMatchObject({ status: 500, code: 'INTERNAL_ERROR' });
  });
});
