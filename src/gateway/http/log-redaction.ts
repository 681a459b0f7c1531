/**
 * What a request log line shows of the request. The query string is left out: it may hold a
 * secret (`?api_key=` from a confused client, a link's `sig`). The Authorization header is never
 * logged (Fastify's request serializer shows no headers, and neither does this one).
 */
import type { Logger } from 'pino';

interface LoggedRequest {
  method: string;
  url: string;
  host?: string;
  ip?: string;
  socket?: { remotePort?: number };
}

export function redactedRequest(req: LoggedRequest): Record<string, unknown> {
  const q = req.url.indexOf('?');
  return {
    method: req.method,
    url: q < 0 ? req.url : `${req.url.slice(0, q)}?[redacted]`,
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

/** The logger handed to Fastify: its request serializer takes precedence over Fastify's own. */
export function withRedactedRequests(logger: Logger): Logger {
  return logger.child({}, { serializers: { req: redactedRequest } });
}
