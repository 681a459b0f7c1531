/**
 * A POST route made safe to retry with `Idempotency-Key` (../idempotency.ts says how): without the
 * header the route runs as before; with it, the key is claimed before the route runs, and a replay
 * is marked `Idempotent-Replayed: true`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { acquireKey, parseIdempotencyKey, requestFingerprint } from '../idempotency.js';
import { UnconfirmedDebit } from '../service.js';
import type { IdempotencyKeys, Reservation } from '../store/idempotency-keys.js';

export interface Answer {
  status: number;
  body: unknown;
}

export const REPLAYED_HEADER = 'idempotent-replayed';

export interface IdempotentRouteDeps {
  keys: IdempotencyKeys;
  /** How long a claim holds before a retry may take it over: the longest a request may take. */
  leaseMs: number;
}

export function idempotent(
  deps: IdempotentRouteDeps,
  run: (req: FastifyRequest, reply: FastifyReply, reservation: Reservation | undefined) => Promise<Answer>,
  /** For a submission: the task id and ledger sequence a key keeps for its whole life. */
  reserve?: (accountId: string) => Promise<Reservation>,
) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const key = parseIdempotencyKey(req.headers['idempotency-key']);
    if (key === undefined) return send(reply, await run(req, reply, undefined));
    const got = await acquireKey(deps.keys, {
      accountId: req.accountId,
      key,
      fingerprint: requestFingerprint(req.method, req.url.split('?')[0] ?? '', req.body),
      leaseMs: deps.leaseMs,
      ...(reserve === undefined ? {} : { reserve: () => reserve(req.accountId) }),
      warn: (message, err) => req.log.warn({ err }, message),
    });
    if ('replay' in got) return send(reply.header(REPLAYED_HEADER, 'true'), got.replay);
    let answer: Answer;
    try {
      answer = await run(req, reply, got.held.reservation);
    } catch (err) {
      await got.held.failed(err instanceof UnconfirmedDebit);
      throw err;
    }
    await got.held.answered(answer.status, answer.body);
    return send(reply, answer);
  };
}

function send(reply: FastifyReply, answer: Answer): FastifyReply {
  return reply.code(answer.status).send(answer.body);
}
