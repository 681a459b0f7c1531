/**
 * Errors raised by Fastify and its plugins before a handler runs (bad JSON, too large, wrong
 * content type, a path parameter too long, a static file's range) in the API's words, so that
 * every answer, theirs included, is the API's envelope with a true message.
 */
import { ApiError } from '../errors.js';

export function fromFrameworkError(err: unknown): ApiError | undefined {
  if (typeof err !== 'object' || err === null || err instanceof ApiError) return undefined;
  const code = 'code' in err && typeof err.code === 'string' ? err.code : '';
  const message = 'message' in err && typeof err.message === 'string' ? err.message : code;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return ApiError.of(
        'PAYLOAD_TOO_LARGE',
        'Expected a request body within the size limit but received a larger one',
      );
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return ApiError.of('UNSUPPORTED_MEDIA_TYPE', 'Expected Content-Type application/json but received another type');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('INVALID_JOB', 400, 'Expected the body to be a JSON object but received an empty body');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return ApiError.of(
        'URI_TOO_LONG',
        'Expected a path parameter (a task id) of at most 100 characters but received a longer one',
      );
    case 'FST_ERR_BAD_URL':
      return ApiError.of('NOT_FOUND', 'Expected a path of this API but received a malformed URL');
    default:
      break;
  }
  const status = statusOf(err);
  if (status === 416)
    return ApiError.of('RANGE_NOT_SATISFIABLE', 'Expected a Range within the file but received one past its end');
  // A dotfile or a path that leaves the results folder: answered like a missing file.
  if (status === 403) return ApiError.of('NOT_FOUND', 'Expected the path of an existing file but received another');
  if (code.startsWith('FST_') && status !== undefined && status < 500)
    return new ApiError('INVALID_JOB', status, message);
  return undefined;
}

function statusOf(err: object): number | undefined {
  const value = 'statusCode' in err ? err.statusCode : 'status' in err ? err.status : undefined;
  return typeof value === 'number' ? value : undefined;
}
