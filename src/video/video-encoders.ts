/**
 * Whether a configured hardware H.264 encoder can be used on this host. Being listed by
 * `ffmpeg -encoders` only says ffmpeg was built with it (Debian's ffmpeg lists h264_nvenc on hosts
 * without an NVIDIA driver, and the H100 has no NVENC at all), so a listed encoder must also encode
 * one small frame before it is trusted. The answer is cached per ffmpeg binary and encoder.
 * Anything unusable falls back to libx264 with one log line.
 */
import { runProcess } from '../media/index.js';
import type { EncoderSettings, VideoEncoderName } from './settings.js';
import { isHardwareEncoder, videoCodecArgs } from './video-args.js';

export interface InfoLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Encoder names from `ffmpeg -encoders` output (lines like " V....D libx264   libx264 H.264 ..."). */
export function parseEncoderList(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const match = /^\s*[VAS][A-Z.]{5}\s+(\S+)/.exec(line);
    if (match?.[1] !== undefined && match[1] !== '=') names.add(match[1]);
  }
  return names;
}

/** The trial: one black frame through the encoder with the pipeline's own options, to nowhere. */
export function trialEncodeArgs(settings: EncoderSettings): string[] {
  return [
    '-hide_banner',
    '-nostdin',
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    'color=c=black:size=256x256:rate=1',
    '-frames:v',
    '1',
    '-pix_fmt',
    'yuv420p',
    ...videoCodecArgs(settings),
    '-f',
    'null',
    '-',
  ];
}

export type EncoderCheck = { usable: true } | { usable: false; reason: string };

const cache = new Map<string, Promise<EncoderCheck>>();

async function check(ffmpeg: string, settings: EncoderSettings): Promise<EncoderCheck> {
  const list = await runProcess(ffmpeg, ['-hide_banner', '-v', 'error', '-encoders'], { timeoutMs: 15_000 });
  if (!parseEncoderList(list.stdout.toString('utf8')).has(settings.codec)) {
    return { usable: false, reason: `this ffmpeg was built without ${settings.codec}` };
  }
  try {
    await runProcess(ffmpeg, trialEncodeArgs(settings), { timeoutMs: 20_000 });
    return { usable: true };
  } catch (error) {
    const tail = (error as { stderrTail?: unknown }).stderrTail;
    const reason =
      typeof tail === 'string' && tail.trim() !== '' ? tail.trim().split('\n').slice(-2).join('; ') : String(error);
    return { usable: false, reason: `a trial encode failed: ${reason}` };
  }
}

/** Whether `settings.codec` works with this ffmpeg (libx264 is assumed to; the encoder reports otherwise). */
export function checkEncoder(ffmpeg: string, settings: EncoderSettings): Promise<EncoderCheck> {
  if (!isHardwareEncoder(settings.codec)) return Promise.resolve({ usable: true });
  const key = `${ffmpeg}\0${settings.codec}`;
  let pending = cache.get(key);
  if (pending === undefined) {
    pending = check(ffmpeg, settings).catch((error: unknown) => ({ usable: false as const, reason: String(error) }));
    cache.set(key, pending);
  }
  return pending;
}

/** The settings to encode with: the configured ones, or libx264 with the same quality when the hardware encoder cannot run. */
export async function chooseEncoder(
  ffmpeg: string,
  settings: EncoderSettings,
  logger?: InfoLogger,
): Promise<EncoderSettings> {
  const verdict = await checkEncoder(ffmpeg, settings);
  if (verdict.usable) return settings;
  const fallback: VideoEncoderName = 'libx264';
  logger?.warn(
    { encoder: settings.codec, fallback, reason: verdict.reason },
    `video encoder ${settings.codec} is not usable here (${verdict.reason}); encoding with ${fallback}`,
  );
  return { ...settings, codec: fallback };
}

/** Forgets cached verdicts (tests, or after a driver was installed). */
export function clearEncoderChecks(): void {
  cache.clear();
}
