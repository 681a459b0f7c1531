/**
 * The music kind's settings, for src/config.ts: the backends an operator can list in
 * MEDIA_WORKER_MUSIC_BACKENDS (and the list's parser), the song's length, the MusicGen model, and
 * the remote backends (ACE-Step, a Suno-style provider). No runtime imports: reading the settings
 * loads no ONNX Runtime.
 */
import {
  httpUrl,
  intSchema,
  nonEmptyText,
  parseNameList,
  parsedBy,
  positiveInt,
  setting,
} from '../../settings-table.js';

export const MUSIC_BACKEND_NAMES = ['musicgen', 'ace-step', 'suno-compatible'] as const;
export type MusicBackendName = (typeof MUSIC_BACKEND_NAMES)[number];

/** "musicgen" or "ace-step,musicgen": known names, no repeats, in order of preference. */
export function parseMusicBackends(value: string): MusicBackendName[] {
  return parseNameList(value, MUSIC_BACKEND_NAMES, 'music backend');
}

export const MUSIC_SETTINGS = {
  musicBackends: setting({
    env: 'MEDIA_WORKER_MUSIC_BACKENDS',
    // One parser for the backend list (above); its error is the setting's.
    schema: parsedBy(parseMusicBackends),
    doc: 'Music backends in order of preference: musicgen, ace-step, suno-compatible (docs/music.md). A job goes to the first that can serve it and is ready; unset: music jobs fail with GENERATION_FAILED and `serve` takes none.',
  }),
  musicSeconds: setting({
    env: 'MEDIA_WORKER_MUSIC_SECONDS',
    schema: intSchema('an integer from 1 to 600', 1, 600),
    default: '30',
    doc: 'Length of each generated song in seconds, for backends that take one (musicgen caps it at 30, ace-step at 600).',
  }),
  musicgenModel: setting({
    env: 'MEDIA_WORKER_MUSICGEN_MODEL',
    schema: nonEmptyText,
    default: 'musicgen-small',
    doc: 'MusicGen model folder: a name under the model files directory or a path. `musicgen-small` is installed by the operator (scripts/install-musicgen-model.ts, CC-BY-NC-4.0 weights); `musicgen-test` is the generated test model (tones, not music).',
  }),
  musicDeadlineMs: setting({
    env: 'MEDIA_WORKER_MUSIC_DEADLINE_MS',
    schema: positiveInt,
    default: '540000',
    doc: 'Longest wait for a remote music backend (ace-step, suno-compatible) from submission to finished audio, retries included; then GENERATION_FAILED. Keep it below the music watchdog.',
  }),
  musicPollIntervalMs: setting({
    env: 'MEDIA_WORKER_MUSIC_POLL_INTERVAL_MS',
    schema: positiveInt,
    default: '5000',
    doc: 'Interval between two status queries of a remote music task.',
  }),
  aceStepUrl: setting({
    env: 'MEDIA_WORKER_ACESTEP_URL',
    schema: httpUrl,
    default: 'http://127.0.0.1:8001',
    doc: 'Base URL of the ACE-Step 1.5 API server run beside the worker (`ace-step` backend).',
  }),
  aceStepApiKey: setting({
    env: 'MEDIA_WORKER_ACESTEP_API_KEY',
    schema: nonEmptyText,
    doc: 'Bearer key of the ACE-Step server, when it was started with one.',
  }),
  sunoBaseUrl: setting({
    env: 'MEDIA_WORKER_SUNO_BASE_URL',
    schema: httpUrl,
    doc: 'Base URL of the Suno-style provider (`suno-compatible` backend), e.g. https://api.example.com; it must serve POST /api/v1/generate and GET /api/v1/generate/record-info.',
  }),
  sunoApiKey: setting({
    env: 'MEDIA_WORKER_SUNO_API_KEY',
    schema: nonEmptyText,
    doc: 'Bearer API key of the Suno-style provider.',
  }),
  sunoModel: setting({
    env: 'MEDIA_WORKER_SUNO_MODEL',
    schema: nonEmptyText,
    default: 'V4_5',
    doc: 'Model name sent to the Suno-style provider.',
  }),
  sunoCallbackUrl: setting({
    env: 'MEDIA_WORKER_SUNO_CALLBACK_URL',
    schema: httpUrl,
    doc: 'callBackUrl sent to providers that require one; the worker polls and never needs the callback.',
  }),
} as const;
