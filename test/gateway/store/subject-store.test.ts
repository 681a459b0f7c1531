/**
 * How `writeIf` (src/gateway/store/subject-store.ts) reads the refusals of a clustered stream's
 * leader from nats-server 2.11 on, which 2.10 never sends: the partition suite on 2.15.1 found
 * concurrent debits of one account through two gateways answered 500 SUBMIT_FAILED ("wrong last
 * sequence", code 10164) where 2.10 says 10071 and the debit is read again and stored. The server's
 * answers are scripted here (a real 2.11+ cluster gives them only in a race:
 * test/scenarios/gateway/clustered-writes.test.ts shows it with NATS_SERVER_BIN naming one).
 */
import { JetStreamApiError, type JetStreamClient, type PubAck } from '@nats-io/jetstream';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isNatsUnavailable } from '../../../src/gateway/nats-unavailable.js';
import { WriteConflict, writeIf } from '../../../src/gateway/store/subject-store.js';
import { UnconfirmedPublishError } from '../../../src/protocol/index.js';

const inFlightOther = (): JetStreamApiError =>
  new JetStreamApiError({ code: 400, err_code: 10164, description: 'wrong last sequence' });
const ownCopyInFlight = (): JetStreamApiError =>
  new JetStreamApiError({ code: 409, err_code: 10158, description: 'duplicate message id is in process' });
const stored = (seq: number, duplicate: boolean): PubAck => ({ stream: 'S', seq, duplicate, domain: '' }) as PubAck;

/** A client whose publishes are answered, in order, by `answers` (an error is thrown); what each publish sent is kept. */
function scripted(answers: (PubAck | Error)[]): { js: JetStreamClient; sent: { msgID?: string }[] } {
  const sent: { msgID?: string }[] = [];
  const js = {
    publish: async (_subject: string, _data: string, options: { msgID?: string }) => {
      sent.push({ ...(options.msgID === undefined ? {} : { msgID: options.msgID }) });
      const next = answers.shift();
      if (next === undefined) throw new Error('no more scripted answers');
      if (next instanceof Error) throw next;
      return next;
    },
  } as unknown as JetStreamClient;
  return { js, sent };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('writeIf against a 2.11+ clustered leader', () => {
  it('takes "wrong last sequence" without a sequence (10164, another write to the subject in flight) as a conflict to read again, with or without a message id', async () => {
    for (const msgId of [undefined, 'debit:t_1']) {
      const { js } = scripted([inFlightOther()]);
      await expect(writeIf(js, 'gw.ledger.a', { x: 1 }, 7, msgId)).rejects.toBeInstanceOf(WriteConflict);
    }
  });

  it('waits for its own first copy still in process (10158) and sends it again under the same id, taking the stored copy', async () => {
    vi.useFakeTimers();
    const { js, sent } = scripted([ownCopyInFlight(), ownCopyInFlight(), stored(8, true)]);
    const write = writeIf(js, 'gw.ledger.a', { x: 1 }, 7, 'debit:t_1');
    await vi.runAllTimersAsync();
    expect((await write).seq).toBe(8);
    expect(sent.map((s) => s.msgID)).toEqual(['debit:t_1:7', 'debit:t_1:7', 'debit:t_1:7']);
  });

  it('ends a copy that stays in process as "outcome unknown" (NATS not answering: 503), not a refusal', async () => {
    vi.useFakeTimers();
    const { js } = scripted(Array.from({ length: 20 }, ownCopyInFlight));
    const write = writeIf(js, 'gw.ledger.a', { x: 1 }, 7, 'debit:t_1').catch((err: unknown) => err);
    await vi.runAllTimersAsync();
    const err = await write;
    expect(err).toBeInstanceOf(UnconfirmedPublishError);
    expect(isNatsUnavailable(err)).toBe(true);
  });
});
