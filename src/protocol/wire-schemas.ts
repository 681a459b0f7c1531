/**
 * Every message of the worker protocol with its zod schema, and their JSON Schemas (zod 4's
 * `z.toJSONSchema`), committed under docs/schemas/ by `npm run schemas:export` and compared with
 * the code by test/protocol/wire-schemas.test.ts. One place lists them, so that a message added to
 * the protocol without a schema is visible here.
 */
import { z } from 'zod';
import { allKinds, errorReplySchema, jobMessageSchema, quoteReplySchema, resultSchema } from '../jobs/index.js';
import { cancelReplySchema, cancelRequestSchema } from './cancel.js';
import { claimMessageSchema } from './claims.js';
import { capabilitiesSchema } from './discovery.js';
import { terminalEventSchema } from './events.js';
import { progressMessageSchema } from './progress.js';
import { uploadUrlReplySchema, uploadUrlRequestSchema } from './upload-url.js';
import { PROTOCOL_VERSION } from './version.js';

/** File name (without `.schema.json`) -> what it describes and its schema. */
export const WIRE_SCHEMAS = {
  job: { title: 'Job message (media.jobs.<kind>.<model>) and quote request (media.quote)', schema: jobMessageSchema },
  'quote-reply': { title: 'Quote reply (media.quote)', schema: quoteReplySchema },
  'error-reply': {
    title: 'Refusal of a quote or cancel (with the Nats-Service-Error headers)',
    schema: errorReplySchema,
  },
  'terminal-event': {
    title: 'Terminal event (media.events.<host>.<task id>)',
    schema: terminalEventSchema.extend({ result: resultSchema }),
  },
  claim: { title: 'Claim of a task by a worker host (media.claims.<host>.<task id>)', schema: claimMessageSchema },
  progress: { title: 'Progress (media.progress.<task id>)', schema: progressMessageSchema },
  'cancel-request': { title: 'Cancel request (media.cancel)', schema: cancelRequestSchema },
  'cancel-reply': { title: 'Cancel reply (media.cancel)', schema: cancelReplySchema },
  capabilities: { title: 'Capabilities of one worker (media.capabilities)', schema: capabilitiesSchema },
  'upload-url-request': {
    title: 'Upload URL request of a worker host (media.uploads.<host>)',
    schema: uploadUrlRequestSchema,
  },
  'upload-url-reply': {
    title: 'Upload URL reply: a presigned PUT, or a refusal (media.uploads.<host>)',
    schema: uploadUrlReplySchema,
  },
} as const;

/** Each kind's result (`result-<kind>`), from its descriptor. */
const RESULT_SCHEMAS: Readonly<Record<string, { title: string; schema: z.ZodType }>> = Object.fromEntries(
  allKinds().map((kind) => [`result-${kind.kind}`, { title: kind.schemas.resultTitle, schema: kind.schemas.result }]),
);

export type WireSchemaName = keyof typeof WIRE_SCHEMAS;

/** Where a message's JSON Schema is committed, relative to the package root (what `$SRV.INFO` advertises). */
export function wireSchemaPath(name: WireSchemaName): string {
  return `docs/schemas/${name}.schema.json`;
}

/**
 * The `$SRV.INFO` metadata of an endpoint: the schemas of its request and of its reply. Typed by
 * name, so an endpoint cannot advertise a file that the export does not write.
 */
export function endpointSchemaMetadata(request: WireSchemaName, reply: WireSchemaName): Record<string, string> {
  return {
    schema: wireSchemaPath(request),
    reply_schema: wireSchemaPath(reply),
    error_schema: wireSchemaPath('error-reply'),
  };
}

/** The JSON Schema documents, by file name (`<name>.schema.json`), as they are committed. */
export function wireJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, { title, schema }] of Object.entries({ ...WIRE_SCHEMAS, ...RESULT_SCHEMAS })) {
    // Input shapes: what a sender may write (optional fields with defaults stay optional).
    const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
    out[`${name}.schema.json`] = {
      ...json,
      $id: `urn:media-worker:protocol:${PROTOCOL_VERSION}:${name}`,
      title,
      'x-protocol-version': PROTOCOL_VERSION,
    };
  }
  return out;
}
