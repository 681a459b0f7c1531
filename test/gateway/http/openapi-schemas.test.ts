/**
 * The OpenAPI document's body of POST /api/v1/generate, read by a standard JSON Schema validator
 * (ajv, with the document's named schemas), refuses exactly what the gateway's own validation
 * (parseJob, what the endpoint runs) refuses, for the rules a schema can say: music's custom mode
 * needs lyrics unless instrumental, each model its input. The running gateway and the generated
 * client are checked in attack.e2e.test.ts.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { JobError } from '../../../src/errors.js';
import { parseJob } from '../../../src/jobs/index.js';
import { openapiComponentSchemas, routeSchemas } from '../../../src/gateway/http/openapi-schemas.js';

// OpenAPI 3.0 schema objects are JSON Schema (draft 4/5) plus keywords of their own (discriminator,
// example), which a non-strict validator skips; `format: uri` is the document's, not checked here.
const validate = new Ajv({ strict: false, validateFormats: false, allErrors: true }).compile({
  ...routeSchemas.generate.body,
  components: { schemas: openapiComponentSchemas },
});

/** The gateway's verdict: null when accepted, else the code. */
function gatewayCode(body: { model: string; input: unknown }): string | null {
  try {
    parseJob({ model: body.model, input: body.input });
    return null;
  } catch (err) {
    if (err instanceof JobError) return err.code;
    throw err;
  }
}

const music = (input: Record<string, unknown>) => ({ model: 'vendor-v5-generate-music', input });
const custom = { custom_mode: true, title: 'Rain', style: 'jazz' };

const bodies: [string, { model: string; input: unknown }, string | null][] = [
  ['simple mode', music({ prompt: 'a calm song' }), null],
  ['simple mode, instrumental', music({ prompt: 'a calm song', instrumental: true, custom_mode: false }), null],
  ['simple mode without a prompt', music({ instrumental: true }), 'MISSING_PROMPT'],
  ['custom mode with lyrics', music({ ...custom, lyrics: '[Verse] la la' }), null],
  [
    'custom mode with lyrics, instrumental false',
    music({ ...custom, lyrics: '[Verse] la la', instrumental: false }),
    null,
  ],
  ['custom mode, instrumental, no lyrics', music({ ...custom, instrumental: true }), null],
  ['custom mode, instrumental, with lyrics', music({ ...custom, instrumental: true, lyrics: 'hum' }), null],
  ['custom mode without lyrics and not instrumental', music({ ...custom }), 'MISSING_LYRICS'],
  ['custom mode without lyrics, instrumental false', music({ ...custom, instrumental: false }), 'MISSING_LYRICS'],
  ['custom mode with empty lyrics', music({ ...custom, lyrics: '' }), 'MISSING_LYRICS'],
  ['custom mode without a style', music({ custom_mode: true, title: 'Rain', instrumental: true }), 'MISSING_STYLE'],
  ['custom mode, title too long', music({ ...custom, title: 'T'.repeat(81), instrumental: true }), 'TITLE_TOO_LONG'],
  [
    'custom mode, unknown vocal gender',
    music({ ...custom, instrumental: true, vocal_gender: 'x' }),
    'INVALID_VOCAL_GENDER',
  ],
  [
    'custom mode, negative tags too long',
    music({ ...custom, instrumental: true, negative_tags: 'x'.repeat(1001) }),
    'INVALID_JOB',
  ],
  ['instrumental not a boolean', music({ ...custom, instrumental: 'yes' }), 'INVALID_JOB'],
  [
    'image upscale',
    { model: 'vendor-image-upscale', input: { image_url: 'https://cdn.example.com/a.png', upscale_factor: '4' } },
    null,
  ],
  [
    'image upscale, factor 3',
    { model: 'vendor-image-upscale', input: { image_url: 'https://cdn.example.com/a.png', upscale_factor: '3' } },
    'INVALID_UPSCALE_FACTOR',
  ],
  [
    'video upscale',
    { model: 'vendor-video-upscale', input: { video_url: 'https://cdn.example.com/a.mp4', hdr: 'sdr' } },
    null,
  ],
  [
    'video upscale without its URL',
    { model: 'vendor-video-upscale', input: { image_url: 'https://cdn.example.com/a.png' } },
    'MISSING_VIDEO_URL',
  ],
  ['unknown model', { model: 'vendor-nothing', input: {} }, 'UNKNOWN_MODEL'],
];

describe('POST /api/v1/generate: the document and the gateway agree', () => {
  it.each(bodies)('%s', (_name, body, code) => {
    expect(gatewayCode(body)).toBe(code);
    expect(validate(body), JSON.stringify(validate.errors)).toBe(code === null);
  });

  it('names each variant for the discriminator, and its mapping covers every model', () => {
    const { discriminator, oneOf } = routeSchemas.generate.body;
    const refs = oneOf.map((s) => s.$ref);
    expect(Object.values(discriminator.mapping).sort()).toEqual([...refs].sort());
    for (const [model, ref] of Object.entries(discriminator.mapping)) {
      const schema = openapiComponentSchemas[ref.replace('#/components/schemas/', '')] as
        { properties: { model: { enum: string[] } } } | undefined;
      expect(schema?.properties.model.enum, ref).toEqual([model]);
    }
  });
});
