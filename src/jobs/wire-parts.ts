/**
 * The pieces the kinds' zod schemas share (src/jobs/kinds/): the envelope of a job message, URLs and
 * text as the wire writes them, the upscale factor, the video pipelines' HDR choice, and the quote's
 * estimate and measurements. The schemas themselves are in each kind's descriptor; wire-schemas.ts
 * joins them into the protocol's unions.
 */
import { z } from 'zod';
import { HDR_MODES } from '../video/settings.js';
import { UPSCALE_FACTORS } from './types.js';

/** A task id: a subject token and a path segment. */
export const TASK_ID_REGEX = /^[A-Za-z0-9_-]{1,128}$/;

export const text = z.string().regex(/\S/, { message: 'not blank' });
export const url = text.describe('A public https URL (checked when fetched: INVALID_URL, FETCH_FAILED)');
export const upscaleFactor = z.enum(UPSCALE_FACTORS).describe('Default "2"');

export const envelope = {
  id: z.string().regex(TASK_ID_REGEX).optional().describe('Task id; the Nats-Msg-Id header wins and must agree'),
  credits: z
    .number()
    .int()
    .nonnegative()
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe('What the control plane deducted: echoed as creditsRefunded on failure'),
  createdAt: z
    .string()
    .optional()
    .describe('ISO 8601 submission time, echoed in the event (else when the stream stored the job)'),
};

/** The video pipelines' HDR choice (every kind that reads a video alike). */
export const hdr = z
  .enum(HDR_MODES)
  .optional()
  .describe(
    'HDR (PQ, HLG) input kept as 10-bit HDR ("keep") or tone-mapped to SDR ("sdr"); default: the worker\'s setting',
  );

export const estimate = {
  estimated_frames: z.number().optional(),
  estimated_seconds: z.number().optional(),
  hardware_class: z.string().optional(),
};

/** What one file was measured as (docs/contract.md, "The bill is what runs"). */
export const measuredStreamsSchema = z
  .object({
    from: z.literal('streams'),
    video: z.object({ seconds: z.number(), frames: z.number().int(), frame_rate: z.string() }).optional(),
    audio: z.object({ seconds: z.number() }).optional(),
    declared_seconds: z
      .number()
      .optional()
      .describe("The headers' duration, where it differs from the streams' by over 1 %"),
  })
  .describe("Measured from the streams' packets, never from headers");
