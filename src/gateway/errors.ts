/**
 * Errors of the HTTP API. A JobError from the contract (src/jobs/) keeps its code and status; the
 * gateway adds the few codes the spec leaves "not shown" (docs/contract.md, "The gateway's HTTP
 * API"). Every error leaves as `{"success": false, "error": {"code", "message"}}`.
 */
import { ERROR_STATUS, allKinds, isJobError, type ErrorCode } from '../jobs/index.js';
import { isNatsUnavailable } from './nats-unavailable.js';

export const GATEWAY_ERROR_STATUS = {
  /** Authorization header absent, not `Bearer <key>`, or an unknown key. */
  UNAUTHORIZED: 401,
  /** Unknown task id, or a task of another account (the same answer on purpose). */
  TASK_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  /** POST /api/v1/tasks/{id}/cancel on a task that has already completed or failed. */
  TASK_NOT_PENDING: 409,
  INVALID_QUERY: 400,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** The account's unexpired uploads already hold GATEWAY_UPLOAD_QUOTA_BYTES or GATEWAY_UPLOAD_QUOTA_FILES. */
  UPLOAD_QUOTA_EXCEEDED: 403,
  /** A link to a result or an upload past its expiry (signed links, src/gateway/results/links.ts). */
  LINK_EXPIRED: 410,
  /** A Range header that no byte of the file satisfies. */
  RANGE_NOT_SATISFIABLE: 416,
  /** A request path longer than the API allows (a task id of more than 100 characters). */
  URI_TOO_LONG: 414,
  /** Too many requests from one API key or one client address in the window (Retry-After says when to retry). */
  RATE_LIMITED: 429,
  /** The account already has GATEWAY_QUOTES_PER_ACCOUNT submissions being priced. */
  TOO_MANY_QUOTES: 429,
  /** GET /api/v1/tasks/{id}/events over GATEWAY_EVENT_STREAMS_PER_ACCOUNT or GATEWAY_EVENT_STREAMS (with Retry-After). */
  TOO_MANY_STREAMS: 429,
  /** No worker answered the quote request, or NATS did not answer: nothing was charged (with Retry-After). */
  SERVICE_UNAVAILABLE: 503,
  /** A `webhook_url` that is not https to a public address (docs/contract.md, "Webhooks"), or an account without a webhook secret. */
  INVALID_WEBHOOK_URL: 400,
  /** POST /api/v1/tasks/{id}/webhook/retry for a task without a webhook, or not finished yet. */
  WEBHOOK_NOT_RETRYABLE: 409,
  /** An `Idempotency-Key` header that is empty, longer than 255 characters or has characters outside visible ASCII (idempotency.ts). */
  INVALID_IDEMPOTENCY_KEY: 400,
  /** The first request with this `Idempotency-Key` is still being handled (with Retry-After). */
  IDEMPOTENCY_KEY_IN_USE: 409,
  /** This `Idempotency-Key` was used with another request (path or body); nothing was done. */
  IDEMPOTENCY_KEY_REUSED: 422,
  /** The submission could not be stored (NATS unreachable); nothing was charged. */
  SUBMIT_FAILED: 500,
} as const;

export type GatewayErrorCode = keyof typeof GATEWAY_ERROR_STATUS;

/**
 * Codes that only ever stand in a failed task's `error` (each kind's processing failure, a cancel, a
 * job that waited too long): no HTTP request is answered with them.
 */
export const TASK_ONLY_CODES: readonly ErrorCode[] = [
  ...new Set<ErrorCode>([...allKinds().map((kind) => kind.failure.code), 'CANCELLED', 'QUEUE_TIMEOUT']),
];

/**
 * The one table of what an HTTP answer's code means for its status: the contract's codes
 * (src/errors.ts) and the gateway's own, less those that only a failed task carries. The OpenAPI
 * document's error lists are read from it (http/openapi-schemas.ts).
 */
export const HTTP_ERROR_STATUS: Readonly<Record<string, number>> = Object.fromEntries(
  Object.entries({ ...ERROR_STATUS, ...GATEWAY_ERROR_STATUS }).filter(
    ([code]) => !(TASK_ONLY_CODES as readonly string[]).includes(code),
  ),
);

/** The codes an answer of `status` may carry, in the table's order. */
export function httpErrorCodes(status: number): string[] {
  return Object.entries(HTTP_ERROR_STATUS)
    .filter(([, s]) => s === status)
    .map(([code]) => code);
}

export class ApiError extends Error {
  constructor(
    readonly code: string,
    readonly status: number,
    message: string,
    /** Response headers that belong to this answer (Retry-After, Allow, WWW-Authenticate). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }

  static of(code: GatewayErrorCode, message: string, headers: Readonly<Record<string, string>> = {}): ApiError {
    return new ApiError(code, GATEWAY_ERROR_STATUS[code], message, headers);
  }
}

export interface ErrorEnvelope {
  success: false;
  error: { code: string; message: string };
}

export function errorEnvelope(code: string, message: string): ErrorEnvelope {
  return { success: false, error: { code, message } };
}

export function successEnvelope<T>(data: T): { success: true; data: T } {
  return { success: true, data };
}

/** Any thrown value as the API's status and body; unknown errors hide their message. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isJobError(err)) return new ApiError(err.code, err.status, err.message);
  if (isNatsUnavailable(err))
    return ApiError.of('SERVICE_UNAVAILABLE', "The service's store (NATS) is not answering; try again later");
  return new ApiError('INTERNAL_ERROR', 500, 'Internal error');
}
