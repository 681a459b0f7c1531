/**
 * The video upscale (`vendor-video-upscale`, spec 2.2, 4.2): its descriptor and everything the
 * contract decides for it. The pipeline is in pipeline/ beside it, bound in src/kinds/video-upscale/runtime.ts.
 */
import { z } from 'zod';
import { HDR_MODES } from '../../../video/settings.js';
import { estimateVideoUpscale } from '../../../jobs/cost-model.js';
import { asObject, optionalEnum, requiredText } from '../../../jobs/fields.js';
import { checkVideo } from '../../../jobs/input-checks.js';
import type { Fields, KindDescriptor } from '../../../jobs/kind-contract.js';
import { VIDEO_UPSCALE_CONTAINERS } from '../../../jobs/limits.js';
import { factor, hdr as openapiHdr, submittedTask, url as openapiUrl } from '../../../jobs/openapi-parts.js';
import {
  checkedEstimate,
  displayed,
  formatDuration,
  measuredStreams,
  processedFrames,
} from '../../../jobs/quote-parts.js';
import { parseQuote, refuse, sameDurationPrice, sameEcho } from '../../../jobs/quote-recheck.js';
import type { QuoteDeps, QuoteEstimate, QuotePolicyOf } from '../../../jobs/quote-types.js';
import { UPSCALE_FACTORS, type VideoUpscaleJob } from '../../../jobs/types.js';
import {
  readUpscaleFactor,
  upscaledResultLinks,
  upscaledResultOpenApi,
  upscaledResultSchema,
} from '../../../jobs/upscale-parts.js';
import {
  checkFrameRate,
  checkJobOutputPixels,
  checkVideoInputSize,
  checkVideoOutputSize,
} from '../../../jobs/work-limits.js';
import { envelope, estimate, hdr, measuredStreamsSchema, upscaleFactor, url } from '../../../jobs/wire-parts.js';
import { VIDEO_UPSCALE_CREDITS_PER_SECOND, priceVideoUpscale } from './price.js';
import type { QuotedVideoJob, VideoUpscaleTypes } from './types.js';

export const VIDEO_UPSCALE_MODEL = 'vendor-video-upscale';

const MINUTE = 60_000;

function parse(input: Fields): VideoUpscaleJob {
  const video_url = requiredText(input, 'video_url', 'MISSING_VIDEO_URL');
  const upscale_factor = readUpscaleFactor(input);
  // Absent: the worker's default (MEDIA_WORKER_VIDEO_HDR) decides (docs/contract.md, "Video fidelity").
  const hdrMode = optionalEnum(input, 'hdr', HDR_MODES, undefined, 'INVALID_JOB');
  return {
    model: VIDEO_UPSCALE_MODEL,
    input: { video_url, upscale_factor, ...(hdrMode === undefined ? {} : { hdr: hdrMode }) },
  };
}

export const videoJobSchema = z
  .object({
    ...envelope,
    model: z.literal(VIDEO_UPSCALE_MODEL),
    input: z.object({
      video_url: url,
      upscale_factor: upscaleFactor.optional(),
      hdr,
    }),
  })
  .strict();

export const videoQuoteSchema = z.object({
  model: z.literal(VIDEO_UPSCALE_MODEL),
  creditsUsed: z.number(),
  input: z.object({
    video_url: z.string(),
    upscale_factor: z.enum(UPSCALE_FACTORS),
    detected_duration: z.string().describe('Seconds, then "s": "12.5s"'),
    billed_seconds: z.number(),
    credits_per_second: z.number(),
  }),
  ...estimate,
  measured: z.object({ video: measuredStreamsSchema }),
});

export const videoResultSchema = upscaledResultSchema('video', {
  duration: z.number().describe('Seconds'),
  frames: z.number(),
});

async function quote(
  job: VideoUpscaleJob,
  deps: QuoteDeps,
  signal?: AbortSignal,
  policy?: QuotePolicyOf<'video'>,
): Promise<QuotedVideoJob> {
  const { video_url, upscale_factor } = job.input;
  const video = await deps.localize(video_url, 'video', signal);
  signal?.throwIfAborted();
  const info = await deps.probeMedia(video.path);
  checkVideo('video_url', info, VIDEO_UPSCALE_CONTAINERS);
  const price = priceVideoUpscale(info.durationSeconds, upscale_factor);
  let estimated: QuoteEstimate = {};
  if (policy !== undefined && info.video !== undefined) {
    const { limits } = policy;
    const size = displayed(info.video);
    checkVideoInputSize(size, limits);
    // The rate it runs at: a variable frame rate is processed at its highest (video/video-geometry.ts).
    checkFrameRate(info.video.cfrRate ?? info.video.fps, limits);
    const f = Number(upscale_factor);
    checkVideoOutputSize({ width: size.width * f, height: size.height * f }, size, upscale_factor, limits);
    const frames = processedFrames(info.video, price.durationSeconds);
    const network = await policy.srNetwork('video', upscale_factor);
    const cost = estimateVideoUpscale({ ...size, frames, factor: upscale_factor }, network, policy.hardware);
    checkJobOutputPixels(frames, cost.outputPixelsPerFrame, limits);
    estimated = checkedEstimate('video', cost, policy);
  }
  return {
    kind: 'video',
    job,
    quote: {
      model: job.model,
      creditsUsed: price.creditsUsed,
      ...estimated,
      input: {
        video_url,
        upscale_factor,
        detected_duration: formatDuration(price.durationSeconds),
        billed_seconds: price.billedSeconds,
        credits_per_second: price.creditsPerSecond,
      },
      measured: { video: measuredStreams(info) },
    },
    inputs: { video },
    probes: { video: info },
  };
}

const videoInput = {
  title: 'VideoUpscaleInput',
  type: 'object',
  properties: {
    video_url: openapiUrl('public URL of an MP4, MOV or MKV video, at most 60 s'),
    upscale_factor: factor,
    hdr: openapiHdr,
  },
  required: ['video_url'],
};

export const videoUpscaleKind: KindDescriptor<VideoUpscaleTypes> = {
  kind: 'video',
  label: 'video upscale',
  models: [VIDEO_UPSCALE_MODEL],
  onGenerate: true,
  parse,
  tool: {
    name: 'upscale-video',
    marker: 'video_url',
    parse: (body) => parse(asObject('body', body)),
    status: 200,
    echo: 'input',
    operationId: 'upscaleVideo',
    summary: 'Submit a video upscale with duration detection',
    body: { ...videoInput, example: { video_url: 'https://cdn.example.com/clip.mp4', upscale_factor: '2' } },
    submitted: submittedTask(
      'VideoUpscaleSubmitted',
      {
        input: {
          type: 'object',
          properties: {
            video_url: { type: 'string' },
            upscale_factor: factor,
            detected_duration: { type: 'string', example: '3s' },
            billed_seconds: { type: 'integer' },
            credits_per_second: { type: 'integer' },
          },
          required: ['video_url', 'upscale_factor', 'detected_duration', 'billed_seconds', 'credits_per_second'],
        },
      },
      ['input'],
    ),
  },
  // One second at the factor's rate: known before anything is fetched.
  minimumCredits: (job) => VIDEO_UPSCALE_CREDITS_PER_SECOND[job.input.upscale_factor],
  quote,
  recheck(job, reply) {
    const q = parseQuote(videoQuoteSchema, reply);
    if (typeof q === 'string') return refuse(q);
    const same = sameEcho(
      [q.input.video_url, job.input.video_url, 'video_url'],
      [q.input.upscale_factor, job.input.upscale_factor, 'upscale_factor'],
    );
    if (same !== null) return refuse(same);
    return sameDurationPrice(q.input, q.creditsUsed, (seconds) => priceVideoUpscale(seconds, job.input.upscale_factor));
  },
  schemas: {
    job: videoJobSchema,
    quote: videoQuoteSchema,
    result: videoResultSchema,
    resultTitle: `Result of a completed ${VIDEO_UPSCALE_MODEL} task`,
  },
  ...upscaledResultLinks,
  failure: { code: 'UPSCALE_FAILED', opening: 'Video upscaling failed' },
  settings: { concurrency: 1, watchdogMs: 30 * MINUTE, maxQueueAgeMs: 120 * MINUTE, pendingLifetimeMs: 120 * MINUTE },
  openapi: {
    unified: { name: 'GenerateVideoUpscale', input: videoInput },
    result: upscaledResultOpenApi('VideoResult', 'video', {
      duration: { type: 'number' },
      frames: { type: 'integer' },
    }),
  },
};
