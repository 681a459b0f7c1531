/**
 * Where the ffprobe and ffmpeg executables are. Resolution is explicit and cheap (a few stat calls),
 * so it runs per call: a binary installed or removed while the daemon runs is picked up, and a
 * missing one fails the job that needs it with a message naming the setting to fix.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, isAbsolute, join } from 'node:path';

export interface BinaryOptions {
  /** An explicit ffprobe executable (config); when unset the npm-shipped one, then the system's. */
  ffprobePath?: string;
  /** The FFMPEG_PATH setting; when unset ffmpeg is looked up on the system PATH. */
  ffmpegPath?: string;
  /** The search path used for system binaries (defaults to process.env.PATH); a seam for tests. */
  searchPath?: string;
}

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable named `name` on the search path, or undefined. */
export function findOnPath(name: string, searchPath: string | undefined = process.env['PATH']): string | undefined {
  for (const dir of (searchPath ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue; // relative PATH entries would depend on the cwd
    const candidate = join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

function installerFfprobe(): string | undefined {
  try {
    // The installer package is CommonJS and throws at load time on unsupported platforms or when its
    // binary is missing; both mean "use the system's".
    const require = createRequire(import.meta.url);
    const installer = require('@ffprobe-installer/ffprobe') as { path?: unknown };
    return typeof installer.path === 'string' && isExecutableFile(installer.path) ? installer.path : undefined;
  } catch {
    return undefined;
  }
}

/** ffprobe: the configured path, else `@ffprobe-installer/ffprobe`, else `ffprobe` on the PATH. */
export function resolveFfprobe(opts: BinaryOptions = {}): string {
  if (opts.ffprobePath !== undefined && opts.ffprobePath !== '') {
    if (!isExecutableFile(opts.ffprobePath)) {
      throw new Error(`Expected an executable file for the ffprobe path but received "${opts.ffprobePath}"`);
    }
    return opts.ffprobePath;
  }
  const found = installerFfprobe() ?? findOnPath('ffprobe', opts.searchPath ?? process.env['PATH']);
  if (found === undefined) {
    throw new Error(
      'ffprobe was not found: reinstall the npm dependencies (@ffprobe-installer/ffprobe) or install ffmpeg so that ffprobe is on the PATH',
    );
  }
  return found;
}

/** ffmpeg: FFMPEG_PATH when set (it must point at an executable), else `ffmpeg` on the PATH. */
export function resolveFfmpeg(opts: BinaryOptions = {}): string {
  if (opts.ffmpegPath !== undefined && opts.ffmpegPath !== '') {
    if (!isExecutableFile(opts.ffmpegPath)) {
      throw new Error(`Expected an executable file for FFMPEG_PATH but received "${opts.ffmpegPath}"`);
    }
    return opts.ffmpegPath;
  }
  const found = findOnPath('ffmpeg', opts.searchPath ?? process.env['PATH']);
  if (found === undefined) {
    throw new Error('ffmpeg was not found on the PATH: install ffmpeg or set FFMPEG_PATH to its executable');
  }
  return found;
}
