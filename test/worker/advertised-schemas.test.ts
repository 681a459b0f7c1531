/**
 * Every JSON Schema path the project advertises is a real file, a valid JSON Schema (draft
 * 2020-12), and the schema of the zod schema it names: the `$SRV.INFO` metadata of the running
 * `media-worker` service (asked of a real nats-server), the docs' links into docs/schemas/, and any
 * `docs/schemas/...` path written in the sources.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { errorReplySchema, jobMessageSchema, quoteReplySchema } from '../../src/jobs/index.js';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { documents } from '../helpers/documents.js';
import {
  CANCEL_ENDPOINT,
  QUOTE_ENDPOINT,
  QUOTE_SERVICE_NAME,
  WIRE_SCHEMAS,
  cancelReplySchema,
  cancelRequestSchema,
  type WireSchemaName,
} from '../../src/protocol/index.js';
import { WorkerMetrics } from '../../src/worker/metrics.js';
import { startQuoteService, type QuoteService } from '../../src/worker/quote-service.js';
import { startNatsServer, type TestNatsServer } from './helpers/nats-server.js';

/** What each endpoint really parses and answers with: the schemas its metadata must name. */
const ENDPOINT_SCHEMAS: Record<string, { schema: z.ZodType; reply_schema: z.ZodType; error_schema: z.ZodType }> = {
  [QUOTE_ENDPOINT]: { schema: jobMessageSchema, reply_schema: quoteReplySchema, error_schema: errorReplySchema },
  [CANCEL_ENDPOINT]: { schema: cancelRequestSchema, reply_schema: cancelReplySchema, error_schema: errorReplySchema },
};

/** The committed file at `relative` (from the package root): parsed, checked against the meta-schema, and its WIRE_SCHEMAS entry. */
async function advertisedSchema(relative: string): Promise<{ json: Record<string, unknown>; name: WireSchemaName }> {
  const file = path.join(PACKAGE_ROOT, relative);
  expect((await stat(file).catch(() => null))?.isFile(), `${relative} is a file`).toBe(true);
  const json = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  // A fresh validator each time: the same `$id` is checked more than once.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  expect(ajv.validateSchema(json), `${relative} is a JSON Schema: ${ajv.errorsText(ajv.errors)}`).toBe(true);
  expect(() => ajv.compile(json), relative).not.toThrow();
  const name = /^docs\/schemas\/([a-z-]+)\.schema\.json$/.exec(relative)?.[1];
  expect(name !== undefined && name in WIRE_SCHEMAS, `${relative} names a message of WIRE_SCHEMAS`).toBe(true);
  return { json, name: name as WireSchemaName };
}

/** The JSON Schema zod generates for `schema`, as the export writes it (without the export's own `$id`, title and version). */
function generated(schema: z.ZodType): unknown {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
}

function withoutStamp(json: Record<string, unknown>): unknown {
  const { $id: _id, title: _title, 'x-protocol-version': _version, ...rest } = json;
  return rest;
}

let server: TestNatsServer;
let nc: NatsConnection;
let service: QuoteService;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  const unused = (): never => {
    throw new Error('not called by this test');
  };
  service = await startQuoteService(nc, {
    quote: unused,
    canRun: () => Promise.resolve(true),
    cancel: unused,
    capabilities: unused,
    logger: pino({ level: 'silent' }),
    metrics: new WorkerMetrics(),
    concurrency: 1,
    timeoutMs: 1000,
    version: '0.1.0',
    metadata: {},
  });
});

afterAll(async () => {
  await service?.stop();
  await nc?.close();
  await server?.close();
});

describe('schema paths the project advertises', () => {
  it("$SRV.INFO: each endpoint's request, reply and error schemas are committed files generated from the zod schemas it uses", async () => {
    const info = (await nc.request(`$SRV.INFO.${QUOTE_SERVICE_NAME}`, '', { timeout: 5000 })).json<{
      metadata: Record<string, string>;
      endpoints: { name: string; metadata: Record<string, string> | null }[];
    }>();
    expect(info.endpoints.map((e) => e.name).sort()).toEqual(Object.keys(ENDPOINT_SCHEMAS).sort());
    // The service's own metadata advertises no schema (a path there would need a row above).
    expect(Object.values(info.metadata).filter((v) => v.includes('.json'))).toEqual([]);
    for (const endpoint of info.endpoints) {
      const expected = ENDPOINT_SCHEMAS[endpoint.name]!;
      expect(Object.keys(endpoint.metadata ?? {}).sort(), endpoint.name).toEqual(Object.keys(expected).sort());
      for (const [key, zodSchema] of Object.entries(expected)) {
        const relative = endpoint.metadata![key]!;
        const { json, name } = await advertisedSchema(relative);
        expect(withoutStamp(json), `${endpoint.name}.${key}: ${relative}`).toEqual(generated(zodSchema));
        expect(WIRE_SCHEMAS[name].schema, `${relative} is exported from the schema ${endpoint.name} uses`).toBe(
          zodSchema,
        );
      }
    }
  });

  it('the docs link only to committed schemas, each the JSON Schema of the zod schema its name stands for', async () => {
    const docs = (await documents()).map((doc) => path.join(PACKAGE_ROOT, doc));
    const linked = new Set<string>();
    for (const doc of docs) {
      const text = await readFile(doc, 'utf8');
      // Links and bare mentions alike: `schemas/x.schema.json`, `docs/schemas/x.schema.json`.
      for (const m of text.matchAll(/(?:docs\/)?schemas\/([A-Za-z0-9_-]+\.schema\.json)/g))
        linked.add(`docs/schemas/${m[1]}`);
      // A `<name>.schema.json` named alone in the protocol's text (e.g. "schema `quote-reply.schema.json`").
      for (const m of text.matchAll(/[`[(]([a-z][a-z-]*)\.schema\.json/g))
        linked.add(`docs/schemas/${m[1]}.schema.json`);
    }
    expect(linked.size).toBeGreaterThan(3);
    for (const relative of linked) {
      const { json, name } = await advertisedSchema(relative);
      expect(withoutStamp(json), relative).toEqual(generated(WIRE_SCHEMAS[name].schema));
    }
  });

  it('every docs/schemas/ path written in the sources is a committed schema', async () => {
    const found = new Set<string>();
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) await walk(full);
        else if (entry.name.endsWith('.ts')) {
          for (const m of (await readFile(full, 'utf8')).matchAll(/docs\/schemas\/([A-Za-z0-9_-]+\.schema\.json)/g))
            found.add(`docs/schemas/${m[1]}`);
        }
      }
    };
    await walk(path.join(PACKAGE_ROOT, 'src'));
    await walk(path.join(PACKAGE_ROOT, 'scripts'));
    for (const relative of found) await advertisedSchema(relative);
  });

  it('refuses a wrong path: the check above can fail', async () => {
    await expect(advertisedSchema('docs/schemas/quote-request.schema.json')).rejects.toThrow(/is a file/);
  });
});
