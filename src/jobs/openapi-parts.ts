/**
 * The pieces of OpenAPI 3.0 schema objects the kinds' descriptors share (src/jobs/kinds/): the
 * gateway assembles the document from them (src/gateway/http/openapi-schemas.ts). OpenAPI 3.0:
 * single values are one-element enums (3.0 has no `const`).
 */
import { UPSCALE_FACTORS } from './types.js';

// https only: an http:// input is refused 400 INVALID_URL unless the deployment allows private
// addresses (MEDIA_WORKER_ALLOW_PRIVATE_URLS, development and one-host setups), which this document does not describe.
export const url = (description: string) => ({ type: 'string', format: 'uri', pattern: '^https://', maxLength: 2048, description });
export const factor = { type: 'string', enum: [...UPSCALE_FACTORS], default: '2', description: '"1" enhances without enlarging' };
export const text = (maxLength: number, description: string) => ({ type: 'string', minLength: 1, maxLength, description });

export const hdr = {
  type: 'string',
  enum: ['keep', 'sdr'],
  description: 'HDR (PQ or HLG) input: "keep" returns 10-bit HEVC with its HDR tags and metadata; "sdr" tone-maps to BT.709. Default: the worker\'s (docs/contract.md, "Video fidelity").',
} as const;

const shortTask = {
  id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$', example: 't_00mwuxbfpww8417u0zg9rb' },
  model: { type: 'string' },
  status: { type: 'string', enum: ['pending'] },
  creditsUsed: { type: 'integer', minimum: 0 },
  creditsRemaining: { type: 'integer', minimum: 0 },
  createdAt: { type: 'string', format: 'date-time' },
} as const;
const shortRequired = ['id', 'model', 'status', 'creditsUsed', 'creditsRemaining', 'createdAt'];

/** The short task a submission answers (spec 2.2), with what an endpoint adds to it. */
export function submittedTask(title: string, extra: Record<string, unknown> = {}, required: string[] = [], more: Record<string, unknown> = {}) {
  return { title, type: 'object', properties: { ...shortTask, ...extra }, required: [...shortRequired, ...required], ...more };
}
