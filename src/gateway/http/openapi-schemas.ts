/**
 * JSON schemas of the API for the OpenAPI document (/api/v1/openapi.json), complete enough for a
 * client generator: every field of spec section 4 with its limits, enums and defaults (one schema
 * per model, `oneOf` over named schemas with a discriminator on `model` for /generate), each status with its error codes, the tool
 * endpoints' echo, each kind's `result`, examples, and links from a submission to its task. The
 * kinds' parts come from their descriptors (src/jobs/kinds/), assembled here by looping over the
 * registry. They document; request bodies are validated by the worker's own parsers
 * (src/jobs/schemas.ts), which give the spec's error codes in the spec's order, something a
 * JSON-schema validator cannot. OpenAPI 3.0.3: single values are one-element enums (3.0 has no `const`).
 */
import {
  HTTPS_URL_PATTERN,
  allKinds,
  submittedTask,
  toolsByMarker,
  type AnyKindContract,
  type JobKind,
  type KindTool,
} from '../../jobs/index.js';
import { MAX_ETA_SECONDS } from '../../protocol/index.js';
import { httpErrorCodes } from '../errors.js';

/** The statuses a route of the document may answer with an error; their codes come from the one table. */
const ERROR_STATUSES = [400, 401, 402, 403, 404, 405, 409, 410, 413, 414, 415, 422, 429, 500, 503] as const;
const errorCodes = Object.fromEntries(ERROR_STATUSES.map((status) => [status, httpErrorCodes(status)])) as Record<
  Status,
  string[]
>;

type Status = (typeof ERROR_STATUSES)[number];

const ERROR_HEADERS: Partial<Record<Status, object>> = {
  401: {
    'www-authenticate': {
      type: 'string',
      description: 'Bearer realm="media-worker", with error="invalid_token" for an unknown or revoked key',
    },
  },
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
      properties: {
        code: { type: 'string', enum: [...errorCodes[status]] },
        message: { type: 'string', example: 'Expected … but received …' },
      },
      required: ['code', 'message'],
    },
  },
  required: ['success', 'error'],
});

const errors = (...statuses: Status[]) => Object.fromEntries(statuses.map((s) => [s, errorBody(s)]));

const envelope = (data: object, description = 'Success') => ({
  description,
  headers: {
    'idempotent-replayed': {
      type: 'string',
      enum: ['true'],
      description: 'present on the stored first answer to a request sent again with its Idempotency-Key',
    },
  },
  type: 'object',
  properties: { success: { type: 'boolean', enum: [true] }, data },
  required: ['success', 'data'],
});

const webhookUrl = {
  type: 'string',
  format: 'uri',
  pattern: HTTPS_URL_PATTERN,
  maxLength: 2048,
  description:
    'Where to POST the task when it finishes (completed, failed, expired, cancelled), signed by Standard Webhooks v1 (see callbacks; docs/contract.md, "Webhooks"). ' +
    "https to a public address; absent: the account's default endpoint, if it has one. Refused: 400 INVALID_WEBHOOK_URL.",
} as const;

/** The kinds the unified endpoint takes, the spec's own model of it first (spec 1.5). */
const unifiedFirst = allKinds().sort(
  (a, b) => Number(b.openapi.unified.first === true) - Number(a.openapi.unified.first === true),
);
const onGenerate = unifiedFirst.filter((kind) => kind.onGenerate);

/** Each kind's `{model, input}` body, told apart by `model`: named, as OpenAPI's discriminator requires. */
const unifiedVariants: Record<string, object> = Object.fromEntries(
  unifiedFirst.map((kind) => {
    const { name, input } = kind.openapi.unified;
    return [
      name,
      {
        title: name,
        type: 'object',
        properties: { model: { type: 'string', enum: [...kind.models] }, input, webhook_url: webhookUrl },
        required: ['model', 'input'],
      },
    ];
  }),
);

const componentRef = (name: string) => `#/components/schemas/${name}`;

/** The document's named schemas (`components.schemas`), referenced by the route schemas below. */
export const openapiComponentSchemas: Record<string, object> = unifiedVariants;

/** A oneOf over the kinds' `{model, input}` components, with the discriminator on `model`. */
const unifiedBody = (kinds: typeof unifiedFirst) => ({
  oneOf: kinds.map((kind) => ({ $ref: componentRef(kind.openapi.unified.name) })),
  discriminator: {
    propertyName: 'model',
    mapping: Object.fromEntries(
      kinds.flatMap((kind) => kind.models.map((model) => [model, componentRef(kind.openapi.unified.name)])),
    ),
  },
});

const generateBody = {
  ...unifiedBody(onGenerate),
  example: {
    model: 'vendor-v5-generate-music',
    input: { prompt: 'a calm piano piece for a rainy morning', instrumental: true },
  },
};

const submitted = submittedTask('Submitted');

const task = {
  title: 'Task',
  type: 'object',
  description: 'Result links to files this gateway serves are signed and expire (docs/contract.md, "Links").',
  properties: {
    id: { type: 'string' },
    model: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'completed', 'failed'] },
    mediaType: { type: 'string', enum: ['music'] },
    result: { oneOf: allKinds().map((kind) => kind.openapi.result), nullable: true },
    error: {
      type: 'object',
      properties: { code: { type: 'string', example: 'TASK_EXPIRED' }, message: { type: 'string' } },
      required: ['code', 'message'],
    },
    creditsUsed: { type: 'integer' },
    creditsRefunded: { type: 'integer' },
    createdAt: { type: 'string', format: 'date-time' },
    progress: {
      type: 'object',
      description: "pending only, best effort: the worker's latest progress",
      properties: {
        stage: { type: 'string' },
        percent: { type: 'number' },
        etaSeconds: {
          type: 'integer',
          minimum: 0,
          maximum: MAX_ETA_SECONDS,
          description:
            'seconds left in this stage at `at`, from the pace the worker measured in it; absent until it can tell',
        },
        at: { type: 'string', format: 'date-time' },
      },
      required: ['stage', 'at'],
    },
    webhook: {
      title: 'WebhookState',
      type: 'object',
      description: "a finished task with a webhook (webhook_url, or the account's default at submission): its delivery",
      properties: {
        id: { type: 'string', description: 'the webhook-id header, the same on every attempt' },
        event: { type: 'string', enum: ['completed', 'failed', 'expired', 'cancelled'] },
        status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
        attempts: {
          type: 'integer',
          minimum: 0,
          description: 'requests made since it was queued (a retry over the API starts again at 0)',
        },
        lastAttemptAt: { type: 'string', format: 'date-time' },
        nextAttemptAt: { type: 'string', format: 'date-time' },
        lastResponse: {
          type: 'object',
          properties: {
            status: { type: 'integer', description: "the endpoint's HTTP status" },
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
const submitErrors = errors(400, 401, 402, 409, 413, 415, 422, 429, 500, 503);

/**
 * The request header of every POST that charges or changes state (IETF httpapi draft
 * "The Idempotency-Key HTTP Header Field"; src/gateway/idempotency.ts).
 */
const idempotencyKey = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      pattern: '^"?[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,255}"?$',
      description:
        'Optional; a UUID v4 per operation, sent again unchanged on every retry of it. Within 24 h the same key with the same ' +
        'path and body answers the first 2xx again (header Idempotent-Replayed: true; charged once); with another body 422 ' +
        'IDEMPOTENCY_KEY_REUSED; while the first is still handled 409 IDEMPOTENCY_KEY_IN_USE (Retry-After). Keys are per account.',
      example: '8e03978e-40d5-43e8-bc93-6894a57f9324',
    },
  },
};

export const routeSchemas = {
  generate: {
    operationId: 'generate',
    summary: 'Submit a music generation or an image or video upscale (unified endpoint)',
    security,
    headers: idempotencyKey,
    body: generateBody,
    response: { 200: envelope(submitted, ACCEPTED), ...submitErrors },
  },
  estimate: {
    operationId: 'estimate',
    summary: 'What a submission would cost, charging nothing: the same quote and checks as submitting it',
    description:
      'The body is any submission\'s: {"model", "input"} for every model (lip-sync included), or a tool endpoint\'s body ' +
      '(told apart by audio_url, image_url, video_url). Refused with the same codes as the submission; subject to the quote ' +
      'limits (TOO_MANY_QUOTES) and rate limits; a balance below the least such a job costs is 402 as at submission.',
    security,
    body: estimateBody(),
    response: {
      200: envelope({
        title: 'Estimate',
        type: 'object',
        properties: {
          model: { type: 'string' },
          creditsUsed: { type: 'integer', minimum: 0, description: 'what the submission would be charged now' },
          duration: { type: 'number', description: "lip-sync: the measured video stream's seconds (billed)" },
          input: {
            type: 'object',
            additionalProperties: true,
            description:
              'the echo a tool endpoint shows (detected_dimensions and output_tier, detected_duration and billed_seconds, ...)',
          },
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
    summary: "Poll a task (unknown id and another account's task: 404 TASK_NOT_FOUND)",
    security,
    params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] },
    response: { 200: envelope(task), ...errors(401, 404, 414, 429) },
  },
  taskEvents: {
    operationId: 'streamTaskEvents',
    summary:
      'Follow a task live: server-sent events (progress, then the terminal task; docs/contract.md, "Live task events")',
    description:
      "text/event-stream: `progress` events (the worker's stage, percent, done/total/unit, etaSeconds: seconds left in the stage once the worker can tell, at; id `<at ms>-<seq>`) while pending, " +
      'then one `completed`, `failed`, `expired` or `cancelled` event (id `end`) whose data is the task as GET /api/v1/tasks/{id} shows it, ' +
      'then the stream ends; a comment line every 15 s keeps it open. A settled task answers its terminal event at once. ' +
      'Last-Event-ID resumes after that event (`end`: 204, nothing follows). Open streams are bounded per account and per gateway (429 TOO_MANY_STREAMS).',
    security,
    params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] },
    headers: {
      type: 'object',
      properties: { 'last-event-id': { type: 'string', description: 'the id of the last event received' } },
    },
    response: {
      200: {
        description: "The task's events",
        content: {
          'text/event-stream': {
            schema: {
              type: 'string',
              example:
                'id: 1772366430000-3\nevent: progress\ndata: {"id":"t_00mwuxbfpww8417u0zg9rb","model":"vendor-image-upscale","stage":"upscaling","done":3,"total":8,"unit":"tiles","percent":37.5,"at":"2026-03-01T12:00:30.000Z","seq":3,"etaSeconds":18}\n\n',
            },
          },
        },
      },
      204: { description: 'Last-Event-ID was the terminal event (`end`): nothing comes after it', type: 'null' },
      ...errors(401, 404, 414, 429),
    },
  },
  cancel: {
    operationId: 'cancelTask',
    summary:
      'Cancel a pending task of the account: refunded once, its worker stops (a settled task: 409 TASK_NOT_PENDING)',
    description:
      "Answers the task once the worker's CANCELLED event has settled it (status failed, error CANCELLED, creditsRefunded); " +
      'rarely still pending, when that event takes longer than 5 s: poll it.',
    security,
    headers: idempotencyKey,
    params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] },
    response: { 200: envelope(task), ...errors(400, 401, 404, 409, 414, 422, 429, 503) },
  },
  webhookRetry: {
    operationId: 'retryTaskWebhook',
    summary: "Send a finished task's webhook again (same webhook-id; the retry schedule starts over)",
    description:
      'A task without a webhook, or still pending: 409 WEBHOOK_NOT_RETRYABLE. Answers the task with its webhook state.',
    security,
    headers: idempotencyKey,
    params: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } }, required: ['id'] },
    response: {
      202: envelope(task, 'Queued: the webhook is sent again'),
      ...errors(400, 401, 404, 409, 414, 422, 429, 503),
    },
  },
  history: {
    operationId: 'listTasks',
    summary: "The account's tasks, newest first, one page at a time",
    security,
    querystring: {
      type: 'object',
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        cursor: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,128}$' },
      },
    },
    response: {
      200: envelope({
        type: 'object',
        properties: { tasks: { type: 'array', items: task }, nextCursor: { type: 'string', nullable: true } },
        required: ['tasks', 'nextCursor'],
      }),
      ...errors(400, 401, 429),
    },
  },
  usage: {
    operationId: 'getUsage',
    summary: "The account's ledger movements (opening credits, top-ups, debits, refunds), oldest first, in pages",
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
                reason: { type: 'string', description: "refunds: the failure's code" },
                note: { type: 'string', description: "top-ups: the operator's note" },
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
    summary: "The account's credit balance",
    security,
    response: {
      200: envelope({
        type: 'object',
        properties: { accountId: { type: 'string' }, credits: { type: 'integer', minimum: 0 } },
        required: ['accountId', 'credits'],
      }),
      ...errors(401, 429),
    },
  },
  upload: {
    operationId: 'upload',
    summary:
      'Upload a local file (raw bytes; image, video or audio by content) to get a signed, expiring URL to submit',
    security,
    // The raw bytes; the format is read from them, the Content-Type only has to be one of these.
    consumes: ['application/octet-stream', 'image/*', 'video/*', 'audio/*'],
    body: {
      type: 'string',
      format: 'binary',
      description: "the file's bytes (JPEG, PNG, WebP, GIF, MP4, MOV, M4V, MKV, WebM, MP3, WAV, AAC, OGG or M4A)",
    },
    response: {
      201: envelope({
        type: 'object',
        properties: {
          url: {
            type: 'string',
            format: 'uri',
            description:
              "a signed, expiring link under this gateway's public address, to submit as an input URL (http:// in a one-host set-up without TLS: the input URL patterns of this document then take it)",
          },
          format: { type: 'string' },
          size: { type: 'integer' },
        },
        required: ['url', 'format', 'size'],
      }),
      ...errors(401, 403, 413, 415, 429, 503),
    },
  },
} as const;

/**
 * Each spec tool endpoint (`POST /api/v1/tools/<name>`) of the kinds that have one, keyed by its
 * name: the kind's body (with webhook_url) and its accepted response.
 */
export function toolRouteSchema(kind: AnyKindContract) {
  const tool = kind.tool!;
  return {
    operationId: tool.operationId,
    summary: tool.summary,
    security,
    headers: idempotencyKey,
    body: toolBody(tool),
    response: { [tool.status]: envelope(tool.submitted, ACCEPTED), ...submitErrors },
  };
}

/** A tool endpoint's body: the kind's, with webhook_url. */
function toolBody(tool: KindTool<JobKind>): Record<string, unknown> {
  const { properties } = tool.body as { properties: Record<string, unknown> };
  return { ...tool.body, properties: { ...properties, webhook_url: webhookUrl } };
}

/**
 * POST /api/v1/estimate's body: the union of the submissions' bodies, as the gateway tells them
 * apart (gateway/http/routes/estimate.ts): `{model, input}` for every kind (told apart by `model`), or a tool
 * endpoint's body without `input`, told apart by the tools' markers in the order the gateway asks
 * them (a body with an earlier tool's marker is that tool's). So each body the gateway takes matches
 * exactly one branch, and `{}` none.
 */
function estimateBody(): Record<string, unknown> {
  const tools = toolsByMarker();
  const toolBranches = tools.map((tool, i) => {
    const { example: _example, ...body } = toolBody(tool);
    return {
      ...body,
      not: {
        anyOf: [{ required: ['input'] }, ...tools.slice(0, i).map((earlier) => ({ required: [earlier.marker] }))],
      },
    };
  });
  return {
    description:
      'a body of POST /api/v1/generate (any model, lip-sync included), or of a tool endpoint (/tools/lipsync, /tools/upscale-image, /tools/upscale-video)',
    oneOf: [{ title: 'EstimateUnified', ...unifiedBody(unifiedFirst) }, ...toolBranches],
    example: {
      model: 'vendor-lipsync-2',
      input: { video_url: 'https://cdn.example.com/talk.mp4', audio_url: 'https://cdn.example.com/voice.mp3' },
    },
  };
}

const SUBMISSIONS: Record<string, string> = {
  generate: '200',
  ...Object.fromEntries(
    allKinds().flatMap((kind) => (kind.tool === undefined ? [] : [[kind.tool.operationId, String(kind.tool.status)]])),
  ),
};

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
        response['links'] = {
          GetTask: {
            operationId: 'getTask',
            parameters: { id: '$response.body#/data/id' },
            description: 'Poll the task until it is completed or failed',
          },
        };
        (operation as Record<string, unknown>)['callbacks'] = webhookCallbacks();
      }
    }
  }
  return doc;
}

/**
 * In a one-host set-up without TLS the upload endpoint hands out http:// links under this gateway's
 * public address, which the API takes as inputs (its workers name the gateway in
 * MEDIA_WORKER_PRIVATE_ORIGINS): the document's input URL patterns take them too. `uploadsBase`:
 * where upload links start (`<results base>uploads/`), when this gateway serves uploads.
 */
export function withUploadLinks<T extends object>(doc: T, uploadsBase: string | undefined): T {
  if (uploadsBase === undefined || uploadsBase.startsWith('https://')) return doc;
  const uploads = `^${uploadsBase.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\S*$`;
  const visit = (node: unknown, key: string | undefined): void => {
    if (Array.isArray(node)) for (const item of node) visit(item, undefined);
    if (typeof node !== 'object' || node === null) return;
    const schema = node as Record<string, unknown>;
    // Inputs only: a webhook goes to the customer's own https endpoint.
    if (schema['pattern'] === HTTPS_URL_PATTERN && key !== 'webhook_url') {
      schema['pattern'] = `${HTTPS_URL_PATTERN}|${uploads}`;
      schema['description'] =
        `${String(schema['description'] ?? '')} (or a link POST /api/v1/uploads gave, http:// in this set-up)`;
    }
    for (const [childKey, child] of Object.entries(schema)) visit(child, childKey);
  };
  // A copy: the document shares its schema objects with the routes and the kinds' descriptors.
  const copy = structuredClone(doc);
  visit(copy, undefined);
  return copy;
}

/** The webhook request a submission's `webhook_url` gets when its task finishes (Standard Webhooks v1). */
function webhookCallbacks(): Record<string, unknown> {
  const header = (name: string, description: string, example: string) => ({
    name,
    in: 'header',
    required: true,
    description,
    schema: { type: 'string' },
    example,
  });
  return {
    taskFinished: {
      '{$request.body#/webhook_url}': {
        post: {
          summary:
            'The task, finished (completed, failed, expired or cancelled): the JSON GET /api/v1/tasks/{id} answers',
          description:
            'Verify webhook-signature before trusting the body: base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>" under the ' +
            "account's secret (the bytes after whsec_, base64-decoded); during a secret rotation two signatures, space-separated. " +
            "Any 2xx is delivered; 410 stops (and turns an account's default endpoint off); 429 and 503 are retried after Retry-After; " +
            'anything else within 15 s is retried for at least 24 h (docs/contract.md, "Webhooks"). Deduplicate by webhook-id.',
          parameters: [
            header(
              'webhook-id',
              'one per task and event, the same on every attempt',
              'msg_t_00mwuxbfpww8417u0zg9rb_completed',
            ),
            header('webhook-timestamp', 'seconds since the epoch when this attempt was signed', '1767225600'),
            header(
              'webhook-signature',
              'v1,<base64 signature>, space-separated when two secrets sign',
              'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
            ),
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
  return {
    type: 'object',
    properties: { success: { type: 'boolean', enum: [true] }, data: { ...task, properties } },
    required: ['success', 'data'],
  };
}
