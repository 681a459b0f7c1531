/**
 * Provider audio and images come into the job directory through the safe fetcher (size caps,
 * timeouts, no private addresses unless allowed), each under its own name. A failed audio
 * download fails the job; a failed image only costs the provider's cover (one is drawn instead).
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { ProcessingError } from '../../../../jobs/index.js';
import { displayUrl, localize, type FetchOptions } from '../../../../media/index.js';

export async function downloadAudio(
  url: string,
  name: string,
  ctx: { dir: string; signal: AbortSignal },
  fetchOptions: FetchOptions,
): Promise<string> {
  const dir = path.join(ctx.dir, name);
  await mkdir(dir, { recursive: true });
  try {
    return (await localize(url, 'audio', { ...fetchOptions, dir, signal: ctx.signal })).path;
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    throw new ProcessingError(`Could not download the generated audio ${displayUrl(url)}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

export async function downloadImage(
  url: string | undefined,
  name: string,
  ctx: { dir: string; signal: AbortSignal; logger: Logger },
  fetchOptions: FetchOptions,
): Promise<string | undefined> {
  if (url === undefined || url.trim() === '') return undefined;
  const dir = path.join(ctx.dir, name);
  await mkdir(dir, { recursive: true });
  try {
    return (await localize(url, 'image', { ...fetchOptions, dir, signal: ctx.signal })).path;
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    ctx.logger.warn({ url: displayUrl(url), err }, 'provider cover not downloaded; drawing one');
    return undefined;
  }
}
