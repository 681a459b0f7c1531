/**
 * The image upscale (`vendor-image-upscale`, spec 2.2, 4.3): its descriptor and everything the
 * contract decides for it. The pipeline is in pipeline/ beside it, bound in src/kinds/image-upscale/runtime.ts.
 */
import { z } from 'zod';
import { asObject, requiredText } from '../../../jobs/fields.js';
import type { Fields, KindDescriptor } from '../../../jobs/kind-contract.js';
import { IMAGE_UPSCALE_FORMATS } from '../../../jobs/limits.js';
import { factor, submittedTask, url as openapiUrl } from '../../../jobs/openapi-parts.js';
import { checkFormat } from '../../../jobs/input-checks.js';
import { estimateImageUpscale } from '../../../jobs/cost-model.js';
import { checkedEstimate } from '../../../jobs/quote-parts.js';
import { parseQuote, refuse, sameEcho, samePrice } from '../../../jobs/quote-recheck.js';
import type { QuoteDeps, QuoteEstimate, QuotePolicyOf } from '../../../jobs/quote-types.js';
import { UPSCALE_FACTORS, type ImageUpscaleJob } from '../../../jobs/types.js';
import {
  readUpscaleFactor,
  upscaledResultLinks,
  upscaledResultOpenApi,
  upscaledResultSchema,
} from '../../../jobs/upscale-parts.js';
import { envelope, estimate, upscaleFactor, url } from '../../../jobs/wire-parts.js';
import { IMAGE_TIERS, priceImageUpscale } from './price.js';
import type { ImageUpscaleTypes, QuotedImageJob } from './types.js';

export const IMAGE_UPSCALE_MODEL = 'vendor-image-upscale';

const MINUTE = 60_000;
const DIMENSIONS = /^([1-9]\d{0,5})×([1-9]\d{0,5})$/;

function parse(input: Fields): ImageUpscaleJob {
  const image_url = requiredText(input, 'image_url', 'MISSING_IMAGE_URL');
  const upscale_factor = readUpscaleFactor(input);
  return { model: IMAGE_UPSCALE_MODEL, input: { image_url, upscale_factor } };
}

export const imageJobSchema = z
  .object({
    ...envelope,
    model: z.literal(IMAGE_UPSCALE_MODEL),
    input: z.object({ image_url: url, upscale_factor: upscaleFactor.optional() }),
  })
  .strict();

export const imageQuoteSchema = z.object({
  model: z.literal(IMAGE_UPSCALE_MODEL),
  creditsUsed: z.number(),
  input: z.object({
    image_url: z.string(),
    upscale_factor: z.enum(UPSCALE_FACTORS),
    detected_dimensions: z.string().describe('<width>×<height> (U+00D7), the displayed size'),
    output_tier: z.enum(['24mp', '48mp', '96mp']),
  }),
  ...estimate,
});

export const imageResultSchema = upscaledResultSchema('image', { format: z.string() });

async function quote(
  job: ImageUpscaleJob,
  deps: QuoteDeps,
  signal?: AbortSignal,
  policy?: QuotePolicyOf<'image'>,
): Promise<QuotedImageJob> {
  const { image_url, upscale_factor } = job.input;
  const image = await deps.localize(image_url, 'image', signal);
  signal?.throwIfAborted();
  const info = await deps.probeImage(image.path);
  checkFormat('image_url', info.format, IMAGE_UPSCALE_FORMATS);
  const price = priceImageUpscale(info.width, info.height, upscale_factor);
  let estimated: QuoteEstimate = {};
  if (policy !== undefined) {
    const network = await policy.srNetwork('image', upscale_factor);
    const cost = estimateImageUpscale(
      { width: info.width, height: info.height, factor: upscale_factor },
      network,
      policy.hardware,
    );
    estimated = checkedEstimate('image', cost, policy);
  }
  return {
    kind: 'image',
    job,
    quote: {
      model: job.model,
      creditsUsed: price.creditsUsed,
      ...estimated,
      input: {
        image_url,
        upscale_factor,
        detected_dimensions: `${info.width}×${info.height}`,
        output_tier: price.outputTier,
      },
    },
    inputs: { image },
    probes: { image: info },
  };
}

const imageInput = {
  title: 'ImageUpscaleInput',
  type: 'object',
  properties: { image_url: openapiUrl('public URL of a JPEG, PNG or WebP image'), upscale_factor: factor },
  required: ['image_url'],
};

export const imageUpscaleKind: KindDescriptor<ImageUpscaleTypes> = {
  kind: 'image',
  label: 'image upscale',
  models: [IMAGE_UPSCALE_MODEL],
  onGenerate: true,
  parse,
  tool: {
    name: 'upscale-image',
    marker: 'image_url',
    parse: (body) => parse(asObject('body', body)),
    status: 200,
    echo: 'input',
    operationId: 'upscaleImage',
    summary: 'Submit an image upscale with dimension detection',
    body: { ...imageInput, example: { image_url: 'https://cdn.example.com/a.png', upscale_factor: '2' } },
    submitted: submittedTask(
      'ImageUpscaleSubmitted',
      {
        input: {
          type: 'object',
          properties: {
            image_url: { type: 'string' },
            upscale_factor: factor,
            detected_dimensions: { type: 'string', example: '640×480' },
            output_tier: { type: 'string', enum: ['24mp', '48mp', '96mp'] },
          },
          required: ['image_url', 'upscale_factor', 'detected_dimensions', 'output_tier'],
        },
      },
      ['input'],
      {
        example: {
          id: 't_00mwuxbfpww8417u0zg9rb',
          model: 'vendor-image-upscale',
          status: 'pending',
          creditsUsed: 20,
          creditsRemaining: 80,
          createdAt: '2026-01-01T00:00:00.000Z',
          input: {
            image_url: 'https://cdn.example.com/a.png',
            upscale_factor: '2',
            detected_dimensions: '640×480',
            output_tier: '24mp',
          },
        },
      },
    ),
  },
  // The lowest tier: known before anything is fetched.
  minimumCredits: () => IMAGE_TIERS[0]!.credits,
  quote,
  recheck(job, reply) {
    const q = parseQuote(imageQuoteSchema, reply);
    if (typeof q === 'string') return refuse(q);
    const same = sameEcho(
      [q.input.image_url, job.input.image_url, 'image_url'],
      [q.input.upscale_factor, job.input.upscale_factor, 'upscale_factor'],
    );
    if (same !== null) return refuse(same);
    const size = DIMENSIONS.exec(q.input.detected_dimensions);
    if (size === null)
      return refuse(`detected_dimensions ${JSON.stringify(q.input.detected_dimensions)} is not <width>×<height>`);
    const price = priceImageUpscale(Number(size[1]), Number(size[2]), job.input.upscale_factor);
    return samePrice(
      q.input,
      [q.creditsUsed, price.creditsUsed, 'creditsUsed'],
      [q.input.output_tier, price.outputTier, 'output_tier'],
    );
  },
  schemas: {
    job: imageJobSchema,
    quote: imageQuoteSchema,
    result: imageResultSchema,
    resultTitle: `Result of a completed ${IMAGE_UPSCALE_MODEL} task`,
  },
  ...upscaledResultLinks,
  failure: { code: 'UPSCALE_FAILED', opening: 'Processing failed' },
  settings: { concurrency: 1, watchdogMs: 15 * MINUTE, maxQueueAgeMs: 60 * MINUTE, pendingLifetimeMs: 60 * MINUTE },
  openapi: {
    unified: { name: 'GenerateImageUpscale', input: imageInput },
    result: upscaledResultOpenApi('ImageResult', 'image', { format: { type: 'string' } }),
  },
};
