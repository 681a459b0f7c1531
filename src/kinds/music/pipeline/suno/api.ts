/**
 * The common Suno-style API (documented by sunoapi.org and kie.ai): what is sent to
 * POST /api/v1/generate and what GET /api/v1/generate/record-info answers, as zod schemas, and the
 * pure mapping from our request. Statuses: PENDING, TEXT_SUCCESS, FIRST_SUCCESS, SUCCESS (the only
 * final success) and the failures CREATE_TASK_FAILED, GENERATE_AUDIO_FAILED, CALLBACK_EXCEPTION,
 * SENSITIVE_WORD_ERROR.
 */
import { z } from 'zod';
import type { MusicRequest } from '../types.js';

/** Body `code`s (and HTTP statuses) that mean "later": 429 out of credits/rate, 430 too frequent, 455 maintenance. */
export const SUNO_TRANSIENT_CODES = [429, 430, 455] as const;

export const SUNO_IN_PROGRESS = ['PENDING', 'TEXT_SUCCESS', 'FIRST_SUCCESS'] as const;
export const SUNO_FAILURES = [
  'CREATE_TASK_FAILED',
  'GENERATE_AUDIO_FAILED',
  'CALLBACK_EXCEPTION',
  'SENSITIVE_WORD_ERROR',
] as const;

export const submitAnswer = z.object({
  code: z.number().int(),
  msg: z.string().nullish(),
  data: z.object({ taskId: z.string().min(1) }).nullish(),
});

export const sunoSong = z.object({
  id: z.string().nullish(),
  audioUrl: z.string().nullish(),
  streamAudioUrl: z.string().nullish(),
  imageUrl: z.string().nullish(),
  prompt: z.string().nullish(),
  title: z.string().nullish(),
  tags: z.string().nullish(),
  duration: z.number().nullish(),
});
export type SunoSong = z.infer<typeof sunoSong>;

export const recordAnswer = z.object({
  code: z.number().int(),
  msg: z.string().nullish(),
  data: z
    .object({
      taskId: z.string().nullish(),
      status: z.string().min(1),
      response: z.object({ sunoData: z.array(sunoSong).nullish() }).nullish(),
      errorCode: z.union([z.number(), z.string()]).nullish(),
      errorMessage: z.string().nullish(),
    })
    .nullish(),
});
export type RecordAnswer = z.infer<typeof recordAnswer>;

export interface SunoGenerateBody {
  customMode: boolean;
  instrumental: boolean;
  model: string;
  prompt: string;
  style?: string;
  title?: string;
  negativeTags?: string;
  vocalGender?: 'm' | 'f';
  callBackUrl?: string;
}

/** Custom mode: prompt = the lyrics (absent when instrumental). Simple mode: prompt = the description. */
export function generateBody(request: MusicRequest, model: string, callbackUrl?: string): SunoGenerateBody {
  const callback = callbackUrl === undefined ? {} : { callBackUrl: callbackUrl };
  if (request.mode === 'simple')
    return { customMode: false, instrumental: request.instrumental, model, prompt: request.description, ...callback };
  return {
    customMode: true,
    instrumental: request.instrumental,
    model,
    prompt: request.instrumental ? '' : (request.lyrics ?? ''),
    style: request.style ?? request.description,
    title: request.title ?? '',
    ...(request.negativeTags.length > 0 ? { negativeTags: request.negativeTags.join(', ') } : {}),
    ...(request.vocalGender === undefined ? {} : { vocalGender: request.vocalGender }),
    ...callback,
  };
}

/** An audio URL we can use: present, http(s), and not the placeholder some providers send before the file exists. */
export function usableAudioUrl(url: string | null | undefined): url is string {
  if (url === null || url === undefined || url.trim() === '') return false;
  if (/\/None\.mp3$/i.test(url.split('?')[0] ?? '')) return false;
  return /^https?:\/\//i.test(url);
}

export type StatusClass = 'success' | 'progress' | 'failure';

export function classifyStatus(status: string): StatusClass {
  if (status === 'SUCCESS') return 'success';
  if ((SUNO_FAILURES as readonly string[]).includes(status) || /_FAILED$|_ERROR$|EXCEPTION$/.test(status))
    return 'failure';
  return 'progress';
}
