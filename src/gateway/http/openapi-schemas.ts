/**
 * JSON schemas of the API for the OpenAPI document (/api/v1/openapi.json). They document; request
 * bodies are validated by the worker's own parsers (src/jobs/schemas.ts), which give the spec's
 * error codes in the spec's order, something a JSON-schema validator cannot.
 */
import { LIPSYNC_MODEL_IDS, MODEL_IDS, SYNC_MODES, UPSCALE_FACTORS } from '../../jobs/index.js';

const errorBody = {
  type: 'object',
  properties: {
    success: { type: 'boolean', const: false },
    error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } }, required: ['code', 'message'] },
  },
  required: ['success', 'error'],
} as const;

const envelope = (data: object) => ({ type: 'object', properties: { success: { type: 'boolean', const: true }, data }, required: ['success', 'data'] });

const submitted = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    model: { type: 'string' },
    status: { type: 'string', enum: ['pending'] },
    creditsUsed: { type: 'integer' },
    creditsRemaining: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    pollUrl: { type: 'string', description: 'lip-sync only' },
    duration: { type: 'number', description: 'lip-sync only: measured video seconds' },
    input: { type: 'object', additionalProperties: true, description: 'upscale tools only (spec 2.2)' },
  },
  required: ['id', 'model', 'status', 'creditsUsed', 'creditsRemaining', 'createdAt'],
} as const;

const task = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    model: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'completed', 'failed'] },
    mediaType: { type: 'string', enum: ['music'] },
    result: { type: 'object', additionalProperties: true, nullable: true },
    error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } },
    creditsUsed: { type: 'integer' },
    creditsRefunded: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    progress: {
      type: 'object',
      description: 'pending only, best effort: the worker\'s latest progress',
      properties: { stage: { type: 'string' }, percent: { type: 'number' }, at: { type: 'string', format: 'date-time' } },
    },
  },
  required: ['id', 'model', 'status', 'createdAt'],
} as const;

const errors = { 400: errorBody, 401: errorBody, 402: errorBody, 404: errorBody, 422: errorBody, 500: errorBody, 503: errorBody };
const security = [{ bearer: [] }];
const factor = { type: 'string', enum: [...UPSCALE_FACTORS], default: '2' };

export const routeSchemas = {
  generate: {
    summary: 'Submit a music generation or an image or video upscale (unified endpoint)',
    security,
    body: {
      type: 'object',
      properties: { model: { type: 'string', enum: MODEL_IDS.filter((m) => !(LIPSYNC_MODEL_IDS as readonly string[]).includes(m)) }, input: { type: 'object', additionalProperties: true } },
      required: ['model'],
    },
    response: { 200: envelope(submitted), ...errors },
  },
  lipsync: {
    summary: 'Submit a lip-sync job (202; poll pollUrl)',
    security,
    body: {
      type: 'object',
      properties: {
        video_url: { type: 'string' },
        audio_url: { type: 'string' },
        sync_mode: { type: 'string', enum: [...SYNC_MODES], default: 'cut_off' },
        model: { type: 'string', enum: [...LIPSYNC_MODEL_IDS], default: 'vendor-lipsync-2' },
        active_speaker: { type: 'boolean', default: false },
      },
      required: ['video_url', 'audio_url'],
    },
    response: { 202: envelope(submitted), ...errors },
  },
  upscaleImage: {
    summary: 'Submit an image upscale with dimension detection',
    security,
    body: { type: 'object', properties: { image_url: { type: 'string' }, upscale_factor: factor }, required: ['image_url'] },
    response: { 200: envelope(submitted), ...errors },
  },
  upscaleVideo: {
    summary: 'Submit a video upscale with duration detection',
    security,
    body: { type: 'object', properties: { video_url: { type: 'string' }, upscale_factor: factor }, required: ['video_url'] },
    response: { 200: envelope(submitted), ...errors },
  },
  task: {
    summary: 'Poll a task (unknown id and another account\'s task: 404 TASK_NOT_FOUND)',
    security,
    params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    response: { 200: envelope(task), 401: errorBody, 404: errorBody },
  },
  history: {
    summary: 'The account\'s tasks, newest first, one page at a time',
    security,
    querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 100 }, cursor: { type: 'string' } } },
    response: {
      200: envelope({ type: 'object', properties: { tasks: { type: 'array', items: task }, nextCursor: { type: 'string', nullable: true } } }),
      400: errorBody,
      401: errorBody,
    },
  },
  balance: {
    summary: 'The account\'s credit balance',
    security,
    response: { 200: envelope({ type: 'object', properties: { accountId: { type: 'string' }, credits: { type: 'integer' } } }), 401: errorBody },
  },
  upload: {
    summary: 'Upload a local file (raw bytes; image, video or audio by content) to get a URL to submit',
    security,
    response: {
      201: envelope({ type: 'object', properties: { url: { type: 'string' }, format: { type: 'string' }, size: { type: 'integer' } } }),
      401: errorBody,
      413: errorBody,
      415: errorBody,
    },
  },
} as const;
