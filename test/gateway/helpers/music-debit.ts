/** A debit of 15 credits for a new music task, as a submission writes it: its ledger sequence and entry. */
import { newTaskId } from '../../../src/gateway/ids.js';
import type { Ledger } from '../../../src/gateway/store/ledger.js';
import type { DebitEntry } from '../../../src/gateway/store/records.js';

export async function musicDebit(ledger: Ledger, accountId: string): Promise<{ seq: number; entry: DebitEntry }> {
  const taskId = newTaskId();
  const outcome = await ledger.debit(accountId, {
    amount: 15,
    taskId,
    kind: 'music',
    job: {
      id: taskId,
      model: 'vendor-v5-generate-music',
      input: { prompt: 'x' },
      credits: 15,
      createdAt: new Date().toISOString(),
    },
    extras: {},
  });
  if (!outcome.ok) throw new Error('the test account ran out of credits');
  return { seq: outcome.seq, entry: outcome.entry };
}
