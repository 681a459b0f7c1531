/**
 * Free space before taking a job: a job of a kind can need its inputs (the download caps), its
 * intermediate files and its output in the temp directory, and its output again in the results
 * directory when that is another file system (on the same one the output is renamed, not copied).
 * A kind whose need does not fit is not pulled (a readiness check run before each pull), so a full
 * disk leaves jobs in the stream for other hosts instead of failing them.
 */
import { mkdir, stat, statfs } from 'node:fs/promises';
import type { ReadinessCheck } from './availability.js';

export interface DiskNeed {
  /** Bytes in the temp directory: inputs, intermediates, output. */
  temp: number;
  /** Bytes in the results directory (the output). */
  results: number;
}

export interface DiskSpaceOptions {
  tempDir: string;
  resultsDir: string;
  need: DiskNeed;
  /** Kept free beyond the need (WORKER_DISK_RESERVE_MB). */
  reserveBytes: number;
  /** Free bytes available to this process in the file system of `dir` (a seam for tests). */
  freeBytes?: (dir: string) => Promise<number>;
}

export async function availableBytes(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}

const MiB = 1024 * 1024;
const mib = (bytes: number): string => `${Math.ceil(bytes / MiB)} MiB`;

/** The `disk-space` check of one kind. */
export function diskSpaceCheck(options: DiskSpaceOptions): ReadinessCheck {
  const free = options.freeBytes ?? availableBytes;
  return {
    name: 'disk-space',
    beforeEachPull: true,
    async run() {
      await Promise.all([mkdir(options.tempDir, { recursive: true }), mkdir(options.resultsDir, { recursive: true })]);
      const [tempDev, resultsDev] = await Promise.all([stat(options.tempDir), stat(options.resultsDir)]).then((s) =>
        s.map((x) => x.dev),
      );
      const sameFs = tempDev === resultsDev;
      const wanted = sameFs
        ? [
            {
              dir: options.tempDir,
              bytes: options.need.temp + options.reserveBytes,
              what: 'the temp and results directories',
            },
          ]
        : [
            { dir: options.tempDir, bytes: options.need.temp + options.reserveBytes, what: 'the temp directory' },
            {
              dir: options.resultsDir,
              bytes: options.need.results + options.reserveBytes,
              what: 'the results directory',
            },
          ];
      const short: string[] = [];
      for (const w of wanted) {
        const available = await free(w.dir);
        if (available < w.bytes)
          short.push(
            `${mib(available)} free in ${w.what} (${w.dir}) but a job can need ${mib(w.bytes)} with the reserve`,
          );
      }
      return short.length === 0 ? null : short.join('; ');
    },
  };
}
