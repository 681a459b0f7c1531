/**
 * The media layer's settings, for src/config.ts: the ffmpeg binaries, the jobs' temporary
 * directory, which addresses inputs may come from, download caps and fetch timeouts. Pure (zod and
 * the settings machinery only), so reading the settings loads no media runtime (sharp); the rest of
 * the layer is entered through index.ts.
 */
import os from 'node:os';
import { booleanSetting, nonEmptyText, nonNegativeInt, parsedBy, positiveInt, setting } from '../settings-table.js';

export type InputKind = 'image' | 'video' | 'audio';

const MiB = 1024 * 1024;

/** Download caps per input kind, in bytes (also the defaults of the MEDIA_WORKER_MAX_*_BYTES settings). */
export const DEFAULT_MAX_BYTES: Readonly<Record<InputKind, number>> = {
  image: 50 * MiB,
  video: 1024 * MiB,
  audio: 200 * MiB,
};
// Also the defaults of the MEDIA_WORKER_FETCH_* settings.
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
export const DEFAULT_DEADLINE_MS = 5 * 60_000;
export const DEFAULT_MAX_REDIRECTS = 5;
/** 16 KiB/s over 5 s windows: a trickle (one byte every few seconds) is cut in 5 s, a slow but real link is not. */
export const DEFAULT_MIN_BYTES_PER_SECOND = 16 * 1024;
export const DEFAULT_RATE_WINDOW_MS = 5_000;

/**
 * MEDIA_WORKER_PRIVATE_ORIGINS: URL prefixes (`http://127.0.0.1:8080/results/`) that inputs may be
 * fetched from although their address is private, over http too: the one-host set-up's own
 * gateway, and nothing else. An origin alone (`http://127.0.0.1:8080`) allows its whole site.
 * Each becomes `<origin><path>/`, so a prefix never matches a longer port or folder name.
 */
export function parsePrivateOrigins(text: string): string[] {
  const entries = text
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '');
  return entries.map((entry) => {
    let url: URL | undefined;
    try {
      url = new URL(entry);
    } catch {
      url = undefined;
    }
    if (
      url === undefined ||
      !['http:', 'https:'].includes(url.protocol) ||
      url.username !== '' ||
      url.password !== '' ||
      url.search !== '' ||
      url.hash !== ''
    ) {
      throw new Error(
        `Expected a comma-separated list of http or https URL prefixes such as http://127.0.0.1:8080/results/ but received ${JSON.stringify(entry)}`,
      );
    }
    return `${url.origin}${url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`}`;
  });
}

export const MEDIA_SETTINGS = {
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
  tmpDir: setting({
    env: 'MEDIA_WORKER_TMP_DIR',
    schema: nonEmptyText,
    default: os.tmpdir(),
    doc: 'Where each job gets its own temporary directory (removed when the job ends).',
  }),
  allowPrivateUrls: setting({
    env: 'MEDIA_WORKER_ALLOW_PRIVATE_URLS',
    schema: booleanSetting,
    default: 'false',
    doc: 'Development and tests only: allow http:// and private, loopback and link-local destinations for job inputs. A one-host set-up names its gateway in MEDIA_WORKER_PRIVATE_ORIGINS instead.',
  }),
  privateOrigins: setting({
    env: 'MEDIA_WORKER_PRIVATE_ORIGINS',
    // One parser for the private URL prefixes (above); its error is the setting's.
    schema: parsedBy(parsePrivateOrigins),
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
} as const;
