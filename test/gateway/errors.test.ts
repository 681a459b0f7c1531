/**
 * The code -> HTTP status table is declared once (src/gateway/errors.ts's HTTP_ERROR_STATUS, made
 * of the contract's codes and the gateway's own); the OpenAPI document's error lists are read from
 * it, and an error the gateway answers with gets the status the table gives its code.
 */
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, JobError, type ErrorCode } from '../../src/jobs/index.js';
import {
  ApiError,
  GATEWAY_ERROR_STATUS,
  HTTP_ERROR_STATUS,
  TASK_ONLY_CODES,
  httpErrorCodes,
  toApiError,
  type GatewayErrorCode,
} from '../../src/gateway/errors.js';
import { routeSchemas } from '../../src/gateway/http/openapi-schemas.js';

type Json = Record<string, unknown>;

/** Every error response of the routes' schemas: its status and the codes its body may carry. */
function documentedErrors(): { route: string; status: number; codes: string[]; description: string }[] {
  const found: { route: string; status: number; codes: string[]; description: string }[] = [];
  for (const [route, schema] of Object.entries(routeSchemas as Record<string, Json>)) {
    for (const [status, response] of Object.entries((schema['response'] ?? {}) as Record<string, Json>)) {
      const description = response['description'];
      if (typeof description !== 'string' || !description.startsWith('Error: ')) continue;
      const code = ((response['properties'] as Json)['error'] as Json)['properties'] as Json;
      found.push({ route, status: Number(status), codes: (code['code'] as Json)['enum'] as string[], description });
    }
  }
  return found;
}

describe('the code -> HTTP status table', () => {
  it("no code is both the contract's and the gateway's (it would have two statuses)", () => {
    expect(Object.keys(GATEWAY_ERROR_STATUS).filter((code) => code in ERROR_STATUS)).toEqual([]);
  });

  it('holds every code of both tables with its status, less the task-only codes', () => {
    for (const [code, status] of Object.entries({ ...ERROR_STATUS, ...GATEWAY_ERROR_STATUS })) {
      expect(HTTP_ERROR_STATUS[code], code).toBe(
        (TASK_ONLY_CODES as readonly string[]).includes(code) ? undefined : status,
      );
    }
    for (const code of TASK_ONLY_CODES) expect(ERROR_STATUS[code]).toBeDefined();
  });

  it("the OpenAPI error lists are the table's codes of their status, in its order", () => {
    const errors = documentedErrors();
    expect(errors.length).toBeGreaterThan(20);
    for (const { route, status, codes, description } of errors) {
      expect(codes, `${route} ${status}`).toEqual(httpErrorCodes(status));
      expect(description).toBe(`Error: ${codes.join(', ')}`);
      for (const code of codes) expect(HTTP_ERROR_STATUS[code], code).toBe(status);
    }
  });

  it('each API-facing code of the contract is documented under the status the gateway answers it with', () => {
    const documented = new Map(
      documentedErrors().flatMap(({ status, codes }) => codes.map((code) => [code, status] as const)),
    );
    for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
      if ((TASK_ONLY_CODES as readonly string[]).includes(code)) continue;
      const answered = toApiError(new JobError(code, 'x'));
      expect(answered.status, code).toBe(HTTP_ERROR_STATUS[code]);
      expect(documented.get(code), code).toBe(answered.status);
    }
    for (const code of Object.keys(GATEWAY_ERROR_STATUS) as GatewayErrorCode[]) {
      expect(ApiError.of(code, 'x').status).toBe(HTTP_ERROR_STATUS[code]);
    }
  });
});
