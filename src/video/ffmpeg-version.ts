/**
 * Which ffmpeg the pipelines talk to, for the one option whose name changed: `-fps_mode` arrived in
 * ffmpeg 5.1 and replaced `-vsync`, which takes the same values (passthrough, cfr, vfr). The static
 * ffmpeg npm ships for a bare GPU host is 4.x, which knows only `-vsync`. The argument builders
 * write `-fps_mode`; a pipeline adapts its argument lists to the binary it runs (`argsForFfmpeg`).
 * The version is read once per binary (`ffmpeg -version`) and cached.
 */
import { runProcess } from '../media/index.js';

export interface FfmpegVersion {
  major: number;
  minor: number;
}

export type FrameTimingOption = '-fps_mode' | '-vsync';

/**
 * The release in `ffmpeg -version`'s first line ("ffmpeg version 5.1.9-0+deb12u1", "ffmpeg version
 * n6.1.1", "ffmpeg version 4.4.1-static ..."); undefined for a git build ("N-112345-g...") or text
 * that is not ffmpeg's.
 */
export function parseFfmpegVersion(text: string): FfmpegVersion | undefined {
  const match = /^ffmpeg version n?(\d+)\.(\d+)/m.exec(text);
  if (match === null) return undefined;
  return { major: Number(match[1]), minor: Number(match[2]) };
}

/** The option that sets how frames are timed: `-fps_mode` from 5.1 (and for an unnumbered git build, newer than any release), else `-vsync`. */
export function frameTimingOption(version: FfmpegVersion | undefined): FrameTimingOption {
  if (version === undefined) return '-fps_mode';
  return version.major > 5 || (version.major === 5 && version.minor >= 1) ? '-fps_mode' : '-vsync';
}

/** `args` as an ffmpeg taking `option` understands them. */
export function withFrameTimingOption(args: readonly string[], option: FrameTimingOption): string[] {
  return args.map((arg) => (arg === '-fps_mode' ? option : arg));
}

const versions = new Map<string, Promise<FfmpegVersion | undefined>>();
/** The option of each binary whose version was read, for spawns that cannot wait (frameTimingOptionOf). */
const options = new Map<string, FrameTimingOption>();

/** The version of the ffmpeg at `ffmpeg`, read once; undefined when it cannot be told (then taken as new). */
export function ffmpegVersion(ffmpeg: string): Promise<FfmpegVersion | undefined> {
  let pending = versions.get(ffmpeg);
  if (pending === undefined) {
    pending = runProcess(ffmpeg, ['-version'], { timeoutMs: 15_000 }).then(
      (result) => parseFfmpegVersion(result.stdout.toString('utf8')),
      () => undefined,
    );
    void pending.then((version) => options.set(ffmpeg, frameTimingOption(version)));
    versions.set(ffmpeg, pending);
  }
  return pending;
}

/** `args` adapted to the ffmpeg at `ffmpeg`. */
export async function argsForFfmpeg(ffmpeg: string, args: readonly string[]): Promise<string[]> {
  return withFrameTimingOption(args, frameTimingOption(await ffmpegVersion(ffmpeg)));
}

/** The option for `ffmpeg` once its version was read (ffmpegVersion), else `-fps_mode`. */
export function frameTimingOptionOf(ffmpeg: string): FrameTimingOption {
  return options.get(ffmpeg) ?? '-fps_mode';
}
