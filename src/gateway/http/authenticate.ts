/**
 * Who is asking: every API route but the document needs `Authorization: Bearer <API key>`, the key
 * looked up in the poll view (keys revoked on any gateway are refused here within a second).
 */
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import type { PollView } from '../poll-view/poll-view.js';

/** RFC 6750: a 401 names the scheme, and says when the key itself was the problem. */
const CHALLENGE = 'Bearer realm="media-worker"';

export async function authenticate(req: FastifyRequest, view: PollView): Promise<string> {
  const header = req.headers.authorization;
  const refuse = (message: string, error?: string) =>
    ApiError.of('UNAUTHORIZED', message, {
      'www-authenticate': error === undefined ? CHALLENGE : `${CHALLENGE}, error="${error}"`,
    });
  if (header === undefined) throw refuse('Expected an Authorization header "Bearer <API key>" but received nothing');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (match === null)
    throw refuse('Expected an Authorization header "Bearer <API key>" but received another scheme', 'invalid_request');
  const accountId = await view.accountOfKey(match[1]!);
  if (accountId === null)
    throw refuse('Expected a valid API key but received an unknown or revoked one', 'invalid_token');
  return accountId;
}
