/**
 * A result file's name says what it holds (issue 40: `upscale-video IN.mkv -o OUT.mp4` wrote
 * Matroska named .mp4). The result's format is the job's, never the name's: Matroska and WebM video
 * give Matroska (every stream kept, docs/contract.md "Video fidelity"), an image gives its own
 * format. So a file named by `-o` with another format's extension is refused, in one line naming
 * the format and the extension to use; a name without an extension claims nothing and is kept.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { RUNTIMES } from '../app/index.js';
import { kindedJob, type Job, type JobKind, type JobOf } from '../jobs/index.js';
import { type SniffedFormat, sniffFile } from '../media/index.js';
import { UsageError } from './job-arg.js';

/** Each result extension's format, as a person names it, and the extensions that name it. */
const FORMATS: Record<string, { name: string; extensions: readonly string[]; why?: string }> = {
  jpg: { name: 'JPEG', extensions: ['jpg', 'jpeg'] },
  png: { name: 'PNG', extensions: ['png'] },
  webp: { name: 'WebP', extensions: ['webp'] },
  mp4: { name: 'MP4', extensions: ['mp4'] },
  mkv: { name: 'Matroska', extensions: ['mkv'], why: 'a Matroska or WebM input gives Matroska, keeping every stream' },
  mp3: { name: 'MP3', extensions: ['mp3'] },
};

/** Why `file` is a wrong name for a result of extension `ext`, or undefined when it is a fair one. */
export function misnamedResult(file: string, ext: string): string | undefined {
  const given = path.extname(file).slice(1).toLowerCase();
  const format = FORMATS[ext] ?? { name: ext.toUpperCase(), extensions: [ext] };
  if (given === '' || format.extensions.includes(given)) return undefined;
  const renamed = path.join(path.dirname(file), `${path.basename(file, path.extname(file))}.${ext}`);
  const claimed = FORMATS[given]?.name ?? `.${given}`;
  const why = format.why === undefined ? '' : ` (${format.why})`;
  return `${file}: the result is ${format.name}, not ${claimed}${why}; use -o ${renamed}`;
}

/** Throws misnamedResult's line as a usage error. */
export function refuseMisnamed(file: string, ext: string): void {
  const problem = misnamedResult(file, ext);
  if (problem !== undefined) throw new UsageError(problem);
}

/**
 * Refuses, before any work, an `output` file named for another format than `job`'s result: the
 * result's format read from the input's first bytes (as the job will write it: app/run-job.ts).
 * The kind's runtime says the extension where the job tells it (KindRuntime.resultExtension); a
 * URL input, or a kind that writes several files, is checked when its result is stored (local-run.ts).
 */
export async function refuseMisnamedOutput(job: Job, output: string | undefined): Promise<void> {
  if ((await namedOutputFile(output)) === undefined) return;
  const ext = await resultExt(job);
  if (ext !== undefined) refuseMisnamed(output!, ext);
}

async function resultExt(job: Job): Promise<string | undefined> {
  const kinded = kindedJob(job);
  return resultExtOfKind(kinded.kind, kinded.job);
}

function resultExtOfKind<K extends JobKind>(kind: K, job: JobOf<K>): Promise<string | undefined> {
  return RUNTIMES[kind].resultExtension?.(job, sniffLocal) ?? Promise.resolve(undefined);
}

/** The local file's sniffed format; undefined for a URL or a file that cannot be read (the job says why). */
async function sniffLocal(input: string): Promise<SniffedFormat | undefined> {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(input)) return undefined;
  return (await sniffFile(input).catch(() => null)) ?? undefined;
}

/**
 * `-o` names a file, or a directory to put the result in: an existing directory, or any path
 * written with a trailing separator (`-o results/`), which is created when missing. The file it
 * names, resolved; undefined for a directory or no `-o`.
 */
export async function namedOutputFile(output: string | undefined): Promise<string | undefined> {
  if (output === undefined) return undefined;
  const namesDir = output.endsWith('/') || output.endsWith(path.sep);
  const isDir =
    namesDir ||
    (await stat(output).then(
      (s) => s.isDirectory(),
      () => false,
    ));
  return isDir ? undefined : path.resolve(output);
}
