/**
 * The pieces of OpenAPI 3.0 schema objects the kinds' descriptors share (src/jobs/kinds/): the
 * gateway assembles the document from them (src/gateway/http/openapi-schemas.ts). OpenAPI 3.0:
 * single values are one-element enums (3.0 has no `const`).
 */
import { UPSCALE_FACTORS } from './types.js';

/**
 * An https URL with a host, as the fetch reads it (media/fetch.ts: a URL that does not parse, another
 * scheme or no host is 400 INVALID_URL): optional user info, a host name or a bracketed IPv6
 * address, an optional port (at most 65535), then anything without spaces. An http:// input is refused too unless
 * the deployment allows it: development, and a one-host set-up's own upload links, which the
 * gateway's document adds to this pattern (gateway/http/openapi-schemas.ts, withUploadLinks).
 */
export const HTTPS_URL_PATTERN =
  '^https:///*(?:[^\\s/?#@]*@)?(?:[^\\s/?#@:\\[\\]]+|\\[[0-9A-Fa-f:.]+\\])(?::(?:[0-9]{0,4}|[0-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(?:[/?#]\\S*)?$';

export const url = (description: string) => ({
  type: 'string',
  format: 'uri',
  pattern: HTTPS_URL_PATTERN,
  maxLength: 2048,
  description,
});
export const factor = {
  type: 'string',
  enum: [...UPSCALE_FACTORS],
  default: '2',
  description: '"1" enhances without enlarging',
};
export const text = (maxLength: number, description: string) => ({
  type: 'string',
  minLength: 1,
  maxLength,
  description,
});

export const hdr = {
  type: 'string',
  enum: ['keep', 'sdr'],
  description:
    'HDR (PQ or HLG) input: "keep" returns 10-bit HEVC with its HDR tags and metadata; "sdr" tone-maps to BT.709. Default: the worker\'s (docs/contract.md, "Video fidelity").',
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
export function submittedTask(
  title: string,
  extra: Record<string, unknown> = {},
  required: string[] = [],
  more: Record<string, unknown> = {},
) {
  return {
    title,
    type: 'object',
    properties: { ...shortTask, ...extra },
    required: [...shortRequired, ...required],
    ...more,
  };
}
