/**
 * Lip-sync (`vendor-lipsync-2`, `-2-pro`, `-3`; spec 2.2, 4.1): its descriptor and everything the
 * contract decides for it. The pipeline is in src/kinds/lipsync/pipeline/, bound in src/kinds/lipsync/runtime.ts.
 */
import { z } from 'zod';
import { HDR_MODES } from '../../../video/settings.js';
import { frameCount } from '../../../jobs/cost-model.js';
import { asObject, optionalBoolean, optionalEnum, requiredText } from '../../../jobs/fields.js';
import { checkAudio, checkVideo } from '../../../jobs/input-checks.js';
import type { Fields, KindDescriptor } from '../../../jobs/kind-contract.js';
import { hdr as openapiHdr, submittedTask, url as openapiUrl } from '../../../jobs/openapi-parts.js';
import { durationMilliseconds } from '../../../jobs/pricing.js';
import { checkedEstimate, displayed, measuredStreams } from '../../../jobs/quote-parts.js';
import { parseQuote, refuse, sameEcho, samePrice } from '../../../jobs/quote-recheck.js';
import type { QuoteDeps, QuoteEstimate } from '../../../jobs/quote-types.js';
import { checkFrameRate, checkVideoInputSize } from '../../../jobs/work-limits.js';
import { checkLipsyncOutput, estimateLipsync, lipsyncOutputSeconds } from './cost.js';
import { LIPSYNC_RATES, priceLipsync } from './price.js';
import { envelope, estimate, hdr, measuredStreamsSchema, url } from '../../../jobs/wire-parts.js';
import {
  DEFAULT_LIPSYNC_MODEL,
  DEFAULT_SYNC_MODE,
  LIPSYNC_AUDIO_CONTAINERS,
  LIPSYNC_MODEL_IDS,
  LIPSYNC_RESULT_URL_LIFETIME_DAYS,
  LIPSYNC_VIDEO_CONTAINERS,
  SYNC_MODES,
  type LipsyncJob,
  type LipsyncModelId,
  type LipsyncQuotePolicy,
  type LipsyncTypes,
  type QuotedLipsyncJob,
} from './types.js';
import type { MediaInfo } from '../../../media/index.js';

const MINUTE = 60_000;

/** Fields in the spec's table order; the tool endpoint's optional `model` is read after sync_mode. */
function parse(input: Fields, pickModel: (fields: Fields) => LipsyncModelId): LipsyncJob {
  const video_url = requiredText(input, 'video_url', 'MISSING_VIDEO_URL');
  const audio_url = requiredText(input, 'audio_url', 'MISSING_AUDIO_URL');
  const sync_mode = optionalEnum(input, 'sync_mode', SYNC_MODES, DEFAULT_SYNC_MODE, 'INVALID_SYNC_MODE');
  const model = pickModel(input);
  const active_speaker = optionalBoolean(input, 'active_speaker', false, 'INVALID_ACTIVE_SPEAKER');
  // The video upscale's field and rule: absent, the worker's default decides.
  const hdrMode = optionalEnum(input, 'hdr', HDR_MODES, undefined, 'INVALID_JOB');
  return {
    model,
    input: { video_url, audio_url, sync_mode, active_speaker, ...(hdrMode === undefined ? {} : { hdr: hdrMode }) },
  };
}

export const lipsyncJobSchema = z
  .object({
    ...envelope,
    model: z.enum(LIPSYNC_MODEL_IDS),
    input: z.object({
      video_url: url,
      audio_url: url,
      sync_mode: z.enum(SYNC_MODES).optional().describe('Default "cut_off"'),
      active_speaker: z.boolean().optional(),
      hdr,
    }),
  })
  .strict();

export const lipsyncQuoteSchema = z.object({
  model: z.enum(LIPSYNC_MODEL_IDS),
  creditsUsed: z.number(),
  duration: z.number().describe('Measured video duration in seconds'),
  input: z.object({
    video_url: z.string(),
    audio_url: z.string(),
    sync_mode: z.enum(SYNC_MODES),
    active_speaker: z.boolean(),
    model: z.enum(LIPSYNC_MODEL_IDS),
    billed_seconds: z.number(),
    credits_per_second: z.number(),
  }),
  ...estimate,
  measured: z.object({ video: measuredStreamsSchema, audio: measuredStreamsSchema }),
});

export const lipsyncResultSchema = z.object({
  url: z.string(),
  type: z.literal('video'),
  duration: z.number(),
});

/**
 * What a lip-sync bills: the video stream's measured span. The file's own audio is replaced by the
 * job's, so audio running past the last frame does not lengthen the bill (docs/contract.md, "Billing").
 * A video stream without timed packets falls back to the file's measured span.
 */
export function lipsyncBilledSeconds(info: MediaInfo): number {
  return info.video?.seconds ?? info.durationSeconds;
}

/**
 * The whole video chain runs before the audio is fetched, so a video over 30 s is refused without
 * downloading the audio.
 */
async function quote(
  job: LipsyncJob,
  deps: QuoteDeps,
  signal?: AbortSignal,
  policy?: LipsyncQuotePolicy,
): Promise<QuotedLipsyncJob> {
  const { video_url, audio_url, sync_mode, active_speaker } = job.input;

  const video = await deps.localize(video_url, 'video', signal);
  signal?.throwIfAborted();
  const videoInfo = await deps.probeMedia(video.path);
  checkVideo('video_url', videoInfo, LIPSYNC_VIDEO_CONTAINERS);
  // The 30 s limit reads the file's measured span, as the worker's own check does (lipsync/pipeline.ts).
  priceLipsync(job.model, videoInfo.durationSeconds);
  const price = priceLipsync(job.model, lipsyncBilledSeconds(videoInfo));
  if (policy !== undefined && videoInfo.video !== undefined) {
    // The output keeps the input's size and rate: the input's limits are the output's.
    checkVideoInputSize(displayed(videoInfo.video), policy.limits);
    checkFrameRate(videoInfo.video.cfrRate ?? videoInfo.video.fps, policy.limits);
  }
  signal?.throwIfAborted();

  const audio = await deps.localize(audio_url, 'audio', signal);
  signal?.throwIfAborted();
  const audioInfo = await deps.probeMedia(audio.path);
  checkAudio('audio_url', audioInfo, LIPSYNC_AUDIO_CONTAINERS);

  let estimated: QuoteEstimate = {};
  if (policy !== undefined && videoInfo.video !== undefined) {
    const audioSeconds = durationMilliseconds(audioInfo.durationSeconds, 'the audio duration') / 1000;
    const outputSeconds = lipsyncOutputSeconds(sync_mode, price.durationSeconds, audioSeconds);
    checkLipsyncOutput(sync_mode, outputSeconds, price.creditsUsed / price.creditsPerSecond, policy.kinds.lipsync);
    const frames = frameCount(outputSeconds, videoInfo.video.fps);
    estimated = checkedEstimate(
      'lipsync',
      estimateLipsync({ ...displayed(videoInfo.video), frames }, policy.hardware, policy.kinds.lipsync.secondsPerFrame),
      policy,
    );
  }

  return {
    kind: 'lipsync',
    job,
    quote: {
      model: job.model,
      creditsUsed: price.creditsUsed,
      duration: price.durationSeconds,
      ...estimated,
      input: {
        video_url,
        audio_url,
        sync_mode,
        active_speaker,
        model: job.model,
        billed_seconds: price.billedSeconds,
        credits_per_second: price.creditsPerSecond,
      },
      measured: { video: measuredStreams(videoInfo), audio: measuredStreams(audioInfo) },
    },
    inputs: { video, audio },
    probes: { video: videoInfo, audio: audioInfo },
  };
}

/** Its fields as the OpenAPI document shows them (the tool body adds `model`). */
const lipsyncFields = {
  video_url: openapiUrl('public URL of the video, at most 30 s'),
  audio_url: openapiUrl('public URL of the audio'),
  sync_mode: { type: 'string', enum: [...SYNC_MODES], default: 'cut_off' },
  active_speaker: { type: 'boolean', default: false },
  hdr: openapiHdr,
};

export const lipsyncKind: KindDescriptor<LipsyncTypes, LipsyncQuotePolicy> = {
  kind: 'lipsync',
  label: 'lip-sync',
  models: LIPSYNC_MODEL_IDS,
  // Its own endpoint (spec 1.5, 4.1): an estimate takes its {model, input} all the same.
  onGenerate: false,
  parse: (input, model) => parse(input, () => model),
  tool: {
    name: 'lipsync',
    marker: 'audio_url',
    // The tool body's optional `model` (default vendor-lipsync-2) is checked in the spec's table order, after sync_mode.
    parse: (body) =>
      parse(asObject('body', body), (fields) =>
        optionalEnum(fields, 'model', LIPSYNC_MODEL_IDS, DEFAULT_LIPSYNC_MODEL, 'INVALID_MODEL'),
      ),
    status: 202,
    echo: 'poll-url-and-duration',
    operationId: 'lipsync',
    summary: 'Submit a lip-sync job (202; poll pollUrl)',
    body: {
      type: 'object',
      properties: {
        video_url: lipsyncFields.video_url,
        audio_url: lipsyncFields.audio_url,
        sync_mode: lipsyncFields.sync_mode,
        model: { type: 'string', enum: [...LIPSYNC_MODEL_IDS], default: 'vendor-lipsync-2' },
        active_speaker: lipsyncFields.active_speaker,
        hdr: lipsyncFields.hdr,
      },
      required: ['video_url', 'audio_url'],
      example: {
        video_url: 'https://cdn.example.com/talk.mp4',
        audio_url: 'https://cdn.example.com/voice.mp3',
        sync_mode: 'cut_off',
      },
    },
    submitted: submittedTask(
      'LipsyncSubmitted',
      {
        pollUrl: { type: 'string', example: '/api/v1/tasks/t_00mwuxbfpww8417u0zg9rb' },
        duration: { type: 'number', description: 'measured video seconds' },
      },
      ['pollUrl', 'duration'],
    ),
  },
  // The model's minimum charge: known before anything is fetched.
  minimumCredits: (job) => LIPSYNC_RATES[job.model].minimumCredits,
  quote,
  recheck(job, reply) {
    const q = parseQuote(lipsyncQuoteSchema, reply);
    if (typeof q === 'string') return refuse(q);
    const same = sameEcho(
      [q.model, job.model, 'model'],
      [q.input.model, job.model, 'input.model'],
      [q.input.video_url, job.input.video_url, 'video_url'],
      [q.input.audio_url, job.input.audio_url, 'audio_url'],
      [q.input.sync_mode, job.input.sync_mode, 'sync_mode'],
      [q.input.active_speaker, job.input.active_speaker, 'active_speaker'],
    );
    if (same !== null) return refuse(same);
    const price = priceLipsync(job.model, q.duration);
    return samePrice(
      q.input,
      [q.creditsUsed, price.creditsUsed, 'creditsUsed'],
      [q.duration, price.durationSeconds, 'duration'],
      [q.input.billed_seconds, price.billedSeconds, 'billed_seconds'],
      [q.input.credits_per_second, price.creditsPerSecond, 'credits_per_second'],
    );
  },
  schemas: {
    job: lipsyncJobSchema,
    quote: lipsyncQuoteSchema,
    result: lipsyncResultSchema,
    resultTitle: 'Result of a completed lip-sync task',
  },
  resultUrls: (result) => [result.url],
  resultLifetimeDays: LIPSYNC_RESULT_URL_LIFETIME_DAYS,
  failure: { code: 'LIPSYNC_FAILED', opening: 'Lip-sync failed', submit: 'LIPSYNC_SUBMIT_FAILED' },
  // The spec's 4 minutes of processing (section 8).
  settings: { concurrency: 1, watchdogMs: 4 * MINUTE, maxQueueAgeMs: 60 * MINUTE, pendingLifetimeMs: 60 * MINUTE },
  openapi: {
    // Off /generate, but an estimate takes it (docs/contract.md, "Estimates").
    unified: {
      name: 'EstimateLipsync',
      input: { title: 'LipsyncInput', type: 'object', properties: lipsyncFields, required: ['video_url', 'audio_url'] },
    },
    result: {
      title: 'LipsyncResult',
      type: 'object',
      properties: { url: { type: 'string' }, type: { type: 'string', enum: ['video'] }, duration: { type: 'number' } },
      required: ['url', 'type', 'duration'],
      // Closed: a video upscale's result (type "video" too, with width, height and frames) is not one,
      // so each kind's result matches exactly one branch of the task's `oneOf`.
      additionalProperties: false,
    },
  },
};
