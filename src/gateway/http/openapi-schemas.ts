/**
 * JSON schemas of the API for the OpenAPI document (/api/v1/openapi.json), complete enough for a
 * client generator: every field of spec section 4 with its limits, enums and defaults (one schema
 * per model, `oneOf` over named schemas with a discriminator on `model` for /generate), each status with its error codes, the upscale
 * `input` echo, each kind's `result`, examples, and links from a submission to its task. They
 * document; request bodies are validated by the worker's own parsers (src/jobs/schemas.ts), which
 * give the spec's error codes in the spec's order, something a JSON-schema validator cannot.
 * OpenAPI 3.0.3: single values are one-element enums (3.0 has no `const`).
 */
import {
  LIPSYNC_MODEL_IDS,
  MUSIC_LYRICS_MAX_CHARS,
  MUSIC_NEGATIVE_TAGS_MAX_CHARS,
  MUSIC_PROMPT_MAX_CHARS,
  MUSIC_STYLE_MAX_CHARS,
  MUSIC_TITLE_MAX_CHARS,
  SYNC_MODES,
  UPSCALE_FACTORS,
  VOCAL_GENDERS,
} from '../../jobs/index.js';

const errorCodes = {
  400: [
    'INVALID_JOB', 'UNKNOWN_MODEL', 'MISSING_PROMPT', 'PROMPT_TOO_LONG', 'MISSING_STYLE', 'STYLE_TOO_LONG', 'MISSING_TITLE', 'TITLE_TOO_LONG',
    'MISSING_LYRICS', 'LYRICS_TOO_LONG', 'INVALID_VOCAL_GENDER', 'MISSING_VIDEO_URL', 'MISSING_AUDIO_URL', 'MISSING_IMAGE_URL', 'INVALID_SYNC_MODE',
    'INVALID_MODEL', 'INVALID_ACTIVE_SPEAKER', 'INVALID_UPSCALE_FACTOR', 'INVALID_URL', 'INVALID_QUERY',
    'INVALID_WEBHOOK_URL',
  ],
  401: ['UNAUTHORIZED'],
  402: ['INSUFFICIENT_CREDITS'],
  403: ['UPLOAD_QUOTA_EXCEEDED'],
  404: ['TASK_NOT_FOUND', 'NOT_FOUND'],
  405: ['METHOD_NOT_ALLOWED'],
  409: ['TASK_NOT_PENDING', 'WEBHOOK_NOT_RETRYABLE'],
  410: ['LINK_EXPIRED'],
  413: ['PAYLOAD_TOO_LARGE'],
  414: ['URI_TOO_LONG'],
  415: ['UNSUPPORTED_MEDIA_TYPE'],
  422: ['PROBE_FAILED', 'VIDEO_TOO_LONG', 'OUTPUT_TOO_LARGE', 'INPUT_TOO_LARGE', 'FETCH_FAILED', 'VIDEO_TOO_LARGE', 'FRAME_RATE_TOO_HIGH', 'AUDIO_TOO_LONG', 'JOB_TOO_COSTLY'],
  429: ['RATE_LIMITED', 'TOO_MANY_QUOTES'],
  500: ['INTERNAL_ERROR', 'SUBMIT_FAILED', 'LIPSYNC_SUBMIT_FAILED'],
  503: ['SERVICE_UNAVAILABLE', 'MODEL_UNAVAILABLE'],
} as const;

type Status = keyof typeof errorCodes;

const ERROR_HEADERS: Partial<Record<Status, object>> = {
  401: { 'www-authenticate': { type: 'string', description: 'Bearer realm="media-worker", with error="invalid_token" for an unknown or revoked key' } },
  405: { allow: { type: 'string', description: 'the methods the path has' } },
  429: { 'retry-after': { type: 'integer', description: 'seconds to wait' } },
  503: { 'retry-after': { type: 'integer', description: 'seconds to wait (no worker answered)' } },
};

const errorBody = (status: Status) => ({
  description: `Error: ${errorCodes[status].join(', ')}`,
  ...(ERROR_HEADERS[status] === undefined ? {} : { headers: ERROR_HEADERS[status] }),
  type: 'object',
  properties: {
    success: { type: 'boolean', enum: [false] },
    error: {
      type: 'object',
      properties: { code: { type: 'string', enum: [...errorCodes[status]] }, message: { type: 'string', example: 'Expected … but received …' } },
      required: ['code', 'message'],
    },
  },
  required: ['success', 'error'],
});

const errors = (...statuses: Status[]) => Object.fromEntries(statuses.map((s) => [s, errorBody(s)]));

const envelope = (data: object, description = 'Success') => ({
  description,
  type: 'object',
  properties: { success: { type: 'boolean', enum: [true] }, data },
  required: ['success', 'data'],
});

// https only: an http:// input is refused 400 INVALID_URL unless the deployment allows private
// addresses (MEDIA_WORKER_ALLOW_PRIVATE_URLS, development and one-host setups), which this document does not describe.
const url = (description: string) => ({ type: 'string', format: 'uri', pattern: '^https://', maxLength: 2048, description });
const factor = { type: 'string', enum: [...UPSCALE_FACTORS], default: '2', description: '"1" enhances without enlarging' };
const text = (maxLength: number, description: string) => ({ type: 'string', minLength: 1, maxLength, description });

const musicSimple = {
  title: 'MusicSimpleInput',
  type: 'object',
  properties: {
    custom_mode: { type: 'boolean', enum: [false], default: false },
    prompt: text(MUSIC_PROMPT_MAX_CHARS, 'what the song is about'),
    instrumental: { type: 'boolean', default: false },
  },
  required: ['prompt'],
} as const;

// Custom mode: lyrics unless instrumental, said by the schema (two shapes told apart by
// `instrumental`) so that validators and generated clients enforce it, as parseJob does.
const musicCustomFields = {
  custom_mode: { type: 'boolean', enum: [true] },
  title: text(MUSIC_TITLE_MAX_CHARS, 'song title'),
  style: text(MUSIC_STYLE_MAX_CHARS, 'style tags'),
  vocal_gender: { type: 'string', enum: [...VOCAL_GENDERS] },
  negative_tags: text(MUSIC_NEGATIVE_TAGS_MAX_CHARS, 'styles to avoid (limit chosen by this API: the style\'s)'),
} as const;

const musicCustomSong = {
  title: 'MusicCustomInput',
  description: 'Custom mode with vocals: lyrics required (MISSING_LYRICS)',
  type: 'object',
  properties: {
    ...musicCustomFields,
    lyrics: text(MUSIC_LYRICS_MAX_CHARS, 'the lyrics sung'),
    // No default: a generated client would make it required (openapi-typescript reads defaults so).
    instrumental: { type: 'boolean', enum: [false] },
  },
  required: ['custom_mode', 'title', 'style', 'lyrics'],
} as const;

const musicCustomInstrumental = {
  title: 'MusicCustomInstrumentalInput',
  description: 'Custom mode without vocals: lyrics optional',
  type: 'object',
  properties: {
    ...musicCustomFields,
    lyrics: text(MUSIC_LYRICS_MAX_CHARS, 'optional for an instrumental'),
    instrumental: { type: 'boolean', enum: [true] },
  },
  required: ['custom_mode', 'title', 'style', 'instrumental'],
} as const;

const imageInput = { title: 'ImageUpscaleInput', type: 'object', properties: { image_url: url('public URL of a JPEG, PNG or WebP image'), upscale_factor: factor }, required: ['image_url'] } as const;
const hdr = {
  type: 'string',
  enum: ['keep', 'sdr'],
  description: 'HDR (PQ or HLG) input: "keep" returns 10-bit HEVC with its HDR tags and metadata; "sdr" tone-maps to BT.709. Default: the worker\'s (docs/contract.md, "Video fidelity").',
} as const;
const videoInput = {
  title: 'VideoUpscaleInput',
  type: 'object',
  properties: { video_url: url('public URL of an MP4, MOV or MKV video, at most 60 s'), upscale_factor: factor, hdr },
  required: ['video_url'],
} as const;

const webhookUrl = {
  type: 'string',
  format: 'uri',
  pattern: '^https://',
  maxLength: 2048,
  description:
    'Where to POST the task when it finishes (completed, failed, expired, cancelled), signed by Standard Webhooks v1 (see callbacks; docs/contract.md, "Webhooks"). ' +
    'https to a public address; absent: the account\'s default endpoint, if it has one. Refused: 400 INVALID_WEBHOOK_URL.',
} as const;

/** The variants of the unified endpoint's body, told apart by `model`: named, as OpenAPI's discriminator requires. */
const generateVariants = {
  GenerateMusic: {
    title: 'GenerateMusic',
    type: 'object',
    properties: { model: { type: 'string', enum: ['vendor-v5-generate-music'] }, input: { oneOf: [musicSimple, musicCustomSong, musicCustomInstrumental] }, webhook_url: webhookUrl },
    required: ['model', 'input'],
  },
  GenerateImageUpscale: { title: 'GenerateImageUpscale', type: 'object', properties: { model: { type: 'string', enum: ['vendor-image-upscale'] }, input: imageInput, webhook_url: webhookUrl }, required: ['model', 'input'] },
  GenerateVideoUpscale: { title: 'GenerateVideoUpscale', type: 'object', properties: { model: { type: 'string', enum: ['vendor-video-upscale'] }, input: videoInput, webhook_url: webhookUrl }, required: ['model', 'input'] },
} as const;

const componentRef = (name: keyof typeof generateVariants) => `#/components/schemas/${name}`;

/** The document's named schemas (`components.schemas`), referenced by the route schemas below. */
export const openapiComponentSchemas: Record<string, object> = generateVariants;

const generateBody = {
  oneOf: (Object.keys(generateVariants) as (keyof typeof generateVariants)[]).map((name) => ({ $ref: componentRef(name) })),
  discriminator: {
    propertyName: 'model',
    mapping: {
      'vendor-v5-generate-music': componentRef('GenerateMusic'),
      'vendor-image-upscale': componentRef('GenerateImageUpscale'),
      'vendor-video-upscale': componentRef('GenerateVideoUpscale'),
    },
  },
  example: { model: 'vendor-v5-generate-music', input: { prompt: 'a calm piano piece for a rainy morning', instrumental: true } },
};

const shortTask = {
  id: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$', example: 't_00mwuxbfpww8417u0zg9rb' },
  model: { type: 'string' },
  status: { type: 'string', enum: ['pending'] },
  creditsUsed: { type: 'integer', minimum: 0 },
  creditsRemaining: { type: 'integer', minimum: 0 },
  createdAt: { type: 'string', format: 'date-time' },
} as const;
const shortRequired = ['id', 'model', 'status', 'creditsUsed', 'creditsRemaining', 'createdAt'];

const submitted = { title: 'Submitted', type: 'object', properties: shortTask, required: shortRequired } as const;
const lipsyncSubmitted = {
  title: 'LipsyncSubmitted',
  type: 'object',
  properties: { ...shortTask, pollUrl: { type: 'string', example: '/api/v1/tasks/t_00mwuxbfpww8417u0zg9rb' }, duration: { type: 'number', description: 'measured video seconds' } },
  required: [...shortRequired, 'pollUrl', 'duration'],
} as const;
const imageSubmitted = {
  title: 'ImageUpscaleSubmitted',
  type: 'object',
  properties: {
    ...shortTask,
    input: {
      type: 'object',
      properties: { image_url: { type: 'string' }, upscale_factor: factor, detected_dimensions: { type: 'string', example: '640×480' }, output_tier: { type: 'string', enum: ['24mp', '48mp', '96mp'] } },
      required: ['image_url', 'upscale_factor', 'detected_dimensions', 'output_tier'],
    },
  },
  required: [...shortRequired, 'input'],
  example: {
    id: 't_00mwuxbfpww8417u0zg9rb', model: 'vendor-image-upscale', status: 'pending', creditsUsed: 20, creditsRemaining: 80, createdAt: '2026-01-01T00:00:00.000Z',
    input: { image_url: 'https://cdn.example.com/a.png', upscale_factor: '2', detected_dimensions: '640×480', output_tier: '24mp' },
  },
} as const;
const videoSubmitted = {
  title: 'VideoUpscaleSubmitted',
  type: 'object',
  properties: {
    ...shortTask,
    input: {
      type: 'object',
      properties: {
        video_url: { type: 'string' }, upscale_factor: factor, detected_duration: { type: 'string', example: '3s' }, billed_seconds: { type: 'integer' }, credits_per_second: { type: 'integer' },
      },
      required: ['video_url', 'upscale_factor', 'detected_duration', 'billed_seconds', 'credits_per_second'],
    },
  },
  required: [...shortRequired, 'input'],
} as const;

const imageResult = { title: 'ImageResult', type: 'object', properties: { url: { type: 'string' }, type: { type: 'string', enum: ['image'] }, width: { type: 'integer' }, height: { type: 'integer' }, format: { type: 'string' } }, required: ['url', 'type', 'width', 'height', 'format'] };
const videoResult = {
  title: 'VideoResult', type: 'object',
  properties: { url: { type: 'string' }, type: { type: 'string', enum: ['video'] }, width: { type: 'integer' }, height: { type: 'integer' }, duration: { type: 'number' }, frames: { type: 'integer' } },
  required: ['url', 'type', 'width', 'height', 'duration', 'frames'],
};
const lipsyncResult = { title: 'LipsyncResult', type: 'object', properties: { url: { type: 'string' }, type: { type: 'string', enum: ['video'] }, duration: { type: 'number' } }, required: ['url', 'type', 'duration'] };
const musicResult = {
  title: 'MusicResult', type: 'object',
  properties: {
    songs: {
      type: 'array', minItems: 2, maxItems: 2,
      items: {
        type: 'object',
        properties: { audio_url: { type: 'string' }, image_url: { type: 'string' }, duration: { type: 'number' }, title: { type: 'string' }, tags: { type: 'string' }, prompt: { type: 'string' } },
        required: ['audio_url', 'image_url', 'duration', 'title', 'tags', 'prompt'],
      },
    },
  },
  required: ['songs'],
};

const task = {
  title: 'Task',
  type: 'object',
  description: 'Result links to files this gateway serves are signed and expire (docs/contract.md, "Links").',
  properties: {
    id: { type: 'string' },
    model: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'completed', 'failed'] },
    mediaType: { type: 'string', enum: ['music'] },
    result: { oneOf: [imageResult, videoResult, lipsyncResult, musicResult], nullable: true },
    error: { type: 'object', properties: { code: { type: 'string', example: 'TASK_EXPIRED' }, message: { type: 'string' } }, required: ['code', 'message'] },
    creditsUsed: { type: 'integer' },
    creditsRefunded: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    progress: {
      type: 'object',
      description: 'pending only, best effort: the worker\'s latest progress',
      properties: { stage: { type: 'string' }, percent: { type: 'number' }, at: { type: 'string', format: 'date-time' } },
      required: ['stage', 'at'],
    },
    webhook: {
      title: 'WebhookState',
      type: 'object',
      description: 'a finished task with a webhook (webhook_url, or the account\'s default at submission): its delivery',
      properties: {
        id: { type: 'string', description: 'the webhook-id header, the same on every attempt' },
        event: { type: 'string', enum: ['completed', 'failed', 'expired', 'cancelled'] },
        status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
        attempts: { type: 'integer', minimum: 0, description: 'requests made since it was queued (a retry over the API starts again at 0)' },
        lastAttemptAt: { type: 'string', format: 'date-time' },
        nextAttemptAt: { type: 'string', format: 'date-time' },
        lastResponse: {
          type: 'object',
          properties: {
            status: { type: 'integer', description: 'the endpoint\'s HTTP status' },
            body: { type: 'string', description: 'the first 256 characters of its body' },
            error: { type: 'string', description: 'why no answer came (refused address, timeout, connection)' },
          },
        },
      },
      required: ['id', 'event', 'status', 'attempts'],
    },
  },
  required: ['id', 'model', 'status', 'createdAt'],
} as const;

const security = [{ bearer: [] }];
const ACCEPTED = 'Accepted and charged: poll the task (link GetTask)';
const submitErrors = errors(400, 401, 402, 413, 415, 422, 429, 500, 503);

export const routeSchemas = {
  generate: {
    operationId: 'generate',
    summary: 'Submit a music generation or an image or video upscale (unified endpoint)',
    security,
    body: generateBody,
    response: { 200: envelope(submitted, ACCEPTED), ...submitErrors },
  },
  lipsync: {
    operationId: 'lipsync',
    summary: 'Submit a lip-sync job (202; poll pollUrl)',
    security,
    body: {
      type: 'object',
      properties: {
        video_url: url('public URL of the video, at most 30 s'),
        audio_url: url('public URL of the audio'),
        sync_mode: { type: 'string', enum: [...SYNC_MODES], default: 'cut_off' },
        model: { type: 'string', enum: [...LIPSYNC_MODEL_IDS], default: 'vendor-lipsync-2' },
        active_speaker: { type: 'boolean', default: false },
        hdr,
        webhook_url: webhookUrl,
      },
      required: ['video_url', 'audio_url'],
      example: { video_url: 'https://cdn.example.com/talk.mp4', audio_url: 'https://cdn.example.com/voice.mp3', sync_mode: 'cut_off' },
    },
    response: { 202: envelope(lipsyncSubmitted, ACCEPTED), ...submitErrors },
  },
  upscaleImage: {
    operationId: 'upscaleImage',
    summary: 'Submit an image upscale with dimension detection',
    security,
    body: { ...imageInput, properties: { ...imageInput.properties, webhook_url: webhookUrl }, example: { image_url: 'https://cdn.example.com/a.png', upscale_factor: '2' } },
    response: { 200: envelope(imageSubmitted, ACCEPTED), ...submitErrors },
  },
  upscaleVideo: {
    operationId: 'upscaleVideo',
    summary: 'Submit a video upscale with duration detection',
    security,
    body: { ...videoInput, properties: { ...videoInput.properties, webhook_url: webhookUrl }, example: { video_url: 'https://cdn.example.com/clip.mp4', upscale_factor: '2' } },
    response: { 200: envelope(videoSubmitted, ACCEPTED), ...submitErrors },
  },
  estimate: {
    operationId: 'estimate',
    summary: 'What a submission would cost, charging nothing: the same quote and checks as submitting it',
    description:
      'The body is any submission\'s: {"model", "input"} for every model (lip-sync included), or a tool endpoint\'s body ' +
      '(told apart by audio_url, image_url, video_url). Refused with the same codes as the submission; subject to the quote ' +
      'limits (TOO_MANY_QUOTES) and rate limits; a balance below the least such a job costs is 402 as at submission.',
    security,
    body: {
      type: 'object',
      description: 'a body of POST /api/v1/generate (any model), /tools/lipsync, /tools/upscale-image or /tools/upscale-video',
      additionalProperties: true,
      example: { model: 'vendor-lipsync-2', input: { video_url: 'https://cdn.example.com/talk.mp4', audio_url: 'https://cdn.example.com/voice.mp3' } },
    },
    response: {
      200: envelope({
        title: 'Estimate',
        type: 'object',
        properties: {
          model: { type: 'string' },
          creditsUsed: { type: 'integer', minimum: 0, description: 'what the submission would be charged now' },
          duration: { type: 'number', description: 'lip-sync: the measured video stream\'s seconds (billed)' },
          input: { type: 'object', additionalProperties: true, description: 'the echo a tool endpoint shows (detected_dimensions and output_tier, detected_duration and billed_seconds, ...)' },
          balance: { type: 'integer', minimum: 0 },
          sufficient: { type: 'boolean', description: 'the balance covers creditsUsed now' },
        },
        required: ['model', 'creditsUsed', 'input', 'balance', 'sufficient'],
      }),
      ...errors(400, 401, 402, 413, 415, 422, 429, 503),
    },
  },
  task: {
    operationId: 'getTask',
    summary: 'Poll a task (unknown id and another account\'s task: 404 TASK_NOT_FOUND)',
    security,
    params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] },
    response: { 200: envelope(task), ...errors(401, 404, 414, 429) },
  },
  taskEvents: {
    operationId: 'streamTaskEvents',
    summary: 'Follow a task live: server-sent events (progress, then the terminal task; docs/contract.md, "Live task events")',
    description:
      'text/event-stream: `progress` events (the worker\'s stage, percent, done/total/unit, at; id `<at ms>-<seq>`) while pending, ' +
      'then one `completed`, `failed`, `expired` or `cancelled` event (id `end`) whose data is the task as GET /api/v1/tasks/{id} shows it, ' +
      'then the stream ends; a comment line every 15 s keeps it open. A settled task answers its terminal event at once. ' +
      'Last-Event-ID resumes after that event (`end`: 204, nothing follows). Open streams are bounded per account and per gateway (429 TOO_MANY_STREAMS).',
    security,
    params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] },
    headers: { type: 'object', properties: { 'last-event-id': { type: 'string', description: 'the id of the last event received' } } },
    response: {
      200: {
        description: 'The task\'s events',
        content: { 'text/event-stream': { schema: { type: 'string', example: 'id: 1772366430000-3\nevent: progress\ndata: {"id":"t_00mwuxbfpww8417u0zg9rb","model":"vendor-image-upscale","stage":"upscaling","done":3,"total":8,"unit":"tiles","percent":37.5,"at":"2026-03-01T12:00:30.000Z","seq":3}\n\n' } } },
      },
      204: { description: 'Last-Event-ID was the terminal event (`end`): nothing comes after it', type: 'null' },
      ...errors(401, 404, 414, 429),
    },
  },
  cancel: {
    operationId: 'cancelTask',
    summary: 'Cancel a pending task of the account: refunded once, its worker stops (a settled task: 409 TASK_NOT_PENDING)',
    description:
      'Answers the task once the worker\'s CANCELLED event has settled it (status failed, error CANCELLED, creditsRefunded); ' +
      'rarely still pending, when that event takes longer than 5 s: poll it.',
    security,
    params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] },
    response: { 200: envelope(task), ...errors(401, 404, 409, 414, 429, 503) },
  },
  webhookRetry: {
    operationId: 'retryTaskWebhook',
    summary: 'Send a finished task\'s webhook again (same webhook-id; the retry schedule starts over)',
    description: 'A task without a webhook, or still pending: 409 WEBHOOK_NOT_RETRYABLE. Answers the task with its webhook state.',
    security,
    params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] },
    response: { 202: envelope(task, 'Queued: the webhook is sent again'), ...errors(401, 404, 409, 414, 429, 503) },
  },
  history: {
    operationId: 'listTasks',
    summary: 'The account\'s tasks, newest first, one page at a time',
    security,
    querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, cursor: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' } } },
    response: {
      200: envelope({ type: 'object', properties: { tasks: { type: 'array', items: task }, nextCursor: { type: 'string', nullable: true } }, required: ['tasks', 'nextCursor'] }),
      ...errors(400, 401, 429),
    },
  },
  usage: {
    operationId: 'getUsage',
    summary: 'The account\'s ledger movements (opening credits, top-ups, debits, refunds), oldest first, in pages',
    description:
      'Each movement is signed; all of them from the first add up to the balance. A page reads at most 1,000 ledger entries, ' +
      'so with a date range it may be short or empty with a nextCursor: follow nextCursor until it is null.',
    security,
    querystring: {
      type: 'object',
      properties: {
        from: { type: 'string', format: 'date-time', description: 'inclusive' },
        to: { type: 'string', format: 'date-time', description: 'exclusive' },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
        cursor: { type: 'string', pattern: '^u[0-9]{1,15}$' },
      },
    },
    response: {
      200: envelope({
        type: 'object',
        properties: {
          accountId: { type: 'string' },
          movements: {
            type: 'array',
            items: {
              title: 'Movement',
              type: 'object',
              properties: {
                type: { type: 'string', enum: ['open', 'topup', 'debit', 'refund'] },
                credits: { type: 'integer', description: 'signed: debits negative' },
                balance: { type: 'integer', minimum: 0, description: 'after this movement' },
                at: { type: 'string', format: 'date-time' },
                taskId: { type: 'string' },
                model: { type: 'string' },
                reason: { type: 'string', description: 'refunds: the failure\'s code' },
                note: { type: 'string', description: 'top-ups: the operator\'s note' },
              },
              required: ['type', 'credits', 'balance', 'at'],
            },
          },
          nextCursor: { type: 'string', nullable: true },
        },
        required: ['accountId', 'movements', 'nextCursor'],
      }),
      ...errors(400, 401, 429),
    },
  },
  balance: {
    operationId: 'getBalance',
    summary: 'The account\'s credit balance',
    security,
    response: { 200: envelope({ type: 'object', properties: { accountId: { type: 'string' }, credits: { type: 'integer', minimum: 0 } }, required: ['accountId', 'credits'] }), ...errors(401, 429) },
  },
  upload: {
    operationId: 'upload',
    summary: 'Upload a local file (raw bytes; image, video or audio by content) to get a signed, expiring URL to submit',
    security,
    // The raw bytes; the format is read from them, the Content-Type only has to be one of these.
    consumes: ['application/octet-stream', 'image/*', 'video/*', 'audio/*'],
    body: { type: 'string', format: 'binary', description: 'the file\'s bytes (JPEG, PNG, WebP, GIF, MP4, MOV, M4V, MKV, WebM, MP3, WAV, AAC, OGG or M4A)' },
    response: {
      201: envelope({ type: 'object', properties: { url: { type: 'string' }, format: { type: 'string' }, size: { type: 'integer' } }, required: ['url', 'format', 'size'] }),
      ...errors(401, 403, 413, 415, 429),
    },
  },
} as const;

const SUBMISSIONS: Record<string, string> = { generate: '200', lipsync: '202', upscaleImage: '200', upscaleVideo: '200' };

/**
 * Adds what @fastify/swagger cannot say from route schemas: each submission's success response
 * links to its task (OpenAPI links: `GET /api/v1/tasks/{id}` with the returned `data.id`).
 */
export function withSubmissionLinks<T extends object>(doc: T): T {
  const paths = (doc as { paths?: Record<string, Record<string, unknown> | undefined> }).paths ?? {};
  for (const item of Object.values(paths)) {
    for (const value of Object.values(item ?? {})) {
      const operation = value as { operationId?: string; responses?: Record<string, Record<string, unknown>> };
      const status = operation.operationId === undefined ? undefined : SUBMISSIONS[operation.operationId];
      const response = status === undefined ? undefined : operation.responses?.[status];
      if (response !== undefined) {
        response['links'] = { GetTask: { operationId: 'getTask', parameters: { id: '$response.body#/data/id' }, description: 'Poll the task until it is completed or failed' } };
        (operation as Record<string, unknown>)['callbacks'] = webhookCallbacks();
      }
    }
  }
  return doc;
}

/** The webhook request a submission's `webhook_url` gets when its task finishes (Standard Webhooks v1). */
function webhookCallbacks(): Record<string, unknown> {
  const header = (name: string, description: string, example: string) => ({ name, in: 'header', required: true, description, schema: { type: 'string' }, example });
  return {
    taskFinished: {
      '{$request.body#/webhook_url}': {
        post: {
          summary: 'The task, finished (completed, failed, expired or cancelled): the JSON GET /api/v1/tasks/{id} answers',
          description:
            'Verify webhook-signature before trusting the body: base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" under the ' +
            'account\'s secret (the bytes after whsec_, base64-decoded); during a secret rotation two signatures, space-separated. ' +
            'Any 2xx is delivered; 410 stops (and turns an account\'s default endpoint off); 429 and 503 are retried after Retry-After; ' +
            'anything else within 15 s is retried for at least 24 h (docs/contract.md, "Webhooks"). Deduplicate by webhook-id.',
          parameters: [
            header('webhook-id', 'one per task and event, the same on every attempt', 'msg_t_00mwuxbfpww8417u0zg9rb_completed'),
            header('webhook-timestamp', 'seconds since the epoch when this attempt was signed', '1767225600'),
            header('webhook-signature', 'v1,<base64 signature>, space-separated when two secrets sign', 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='),
          ],
          requestBody: { required: true, content: { 'application/json': { schema: callbackBody() } } },
          responses: { '2XX': { description: 'Delivered' }, '410': { description: 'Gone: no more attempts' } },
        },
      },
    },
  };
}

function callbackBody(): Record<string, unknown> {
  const { webhook: _w, progress: _p, ...properties } = task.properties;
  return { type: 'object', properties: { success: { type: 'boolean', enum: [true] }, data: { ...task, properties } }, required: ['success', 'data'] };
}
