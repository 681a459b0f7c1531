/**
 * Whole lip-sync jobs, MuseTalk against Wav2Lip, on the same clip, host, threads and providers:
 * `lipsyncFile` as a job runs it (decode, face pass and tracking, audio features, the network,
 * blend, encode), with MEDIA_WORKER_LIPSYNC_MODELS's mapping naming each network for
 * vendor-lipsync-2. The clip is the bundled face video (opencv-doc's Megamind, 270 frames at
 * 720 x 528, which scripts/test-setup.sh installs; its picture put in MP4 with H.264 and its
 * soundtrack in M4A once, as a job's inputs come) driven by its own soundtrack, `cut_off`; the
 * output is thrown away. `bench musetalk --jobs` prints it after the network stage.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { SessionCache } from '../../src/inference/index.js';
import { lipsyncFile, parseLipsyncModelMapping } from '../../src/kinds/lipsync/pipeline/index.js';
import { probeMedia, resolveFfmpeg, runProcess } from '../../src/media/index.js';

export const FACE_VIDEO = '/usr/share/doc/opencv-doc/examples/data/Megamind.avi';

export interface JobFigures {
  network: string;
  frames: number;
  drivenFrames: number;
  seconds: number;
  framesPerSecond: number;
}

/** One job per manifest (a Wav2Lip or a MuseTalk name), the fastest of `repeat` runs each. */
export async function timeWholeJobs(o: {
  manifests: readonly string[];
  sessions: SessionCache;
  modelsDir: string;
  batch: number;
  repeat: number;
}): Promise<JobFigures[]> {
  if (!existsSync(FACE_VIDEO))
    throw new Error(`Expected ${FACE_VIDEO} for --jobs: install the Debian package opencv-doc`);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-musetalk-jobs-'));
  try {
    const clip = path.join(dir, 'face.mp4');
    const soundtrack = path.join(dir, 'soundtrack.m4a');
    const picture = ['-map', '0:v', '-c:v', 'libx264', '-crf', '18', clip];
    const sound = ['-map', '0:a', '-c:a', 'aac', soundtrack];
    await runProcess(
      resolveFfmpeg(),
      ['-hide_banner', '-v', 'error', '-nostdin', '-y', '-i', FACE_VIDEO, ...picture, ...sound],
      {
        maxStdoutBytes: 1024,
      },
    );
    const [info, audioInfo] = await Promise.all([probeMedia(clip), probeMedia(soundtrack)]);
    const out: JobFigures[] = [];
    for (const manifest of o.manifests) {
      let best: JobFigures | undefined;
      for (let r = 0; r < o.repeat; r++) {
        const started = performance.now();
        const outcome = await lipsyncFile(
          {
            videoPath: clip,
            videoInfo: info,
            audioPath: soundtrack,
            audioInfo,
            outputPath: path.join(dir, `${manifest}-${r}.mp4`),
            model: 'vendor-lipsync-2',
            syncMode: 'cut_off',
            activeSpeaker: false,
            batch: o.batch,
          },
          {
            sessions: o.sessions,
            lipsyncModelMapping: parseLipsyncModelMapping(manifest),
            registry: { modelsDir: o.modelsDir },
          },
        );
        const seconds = (performance.now() - started) / 1000;
        if (best === undefined || seconds < best.seconds)
          best = {
            network: outcome.network,
            frames: outcome.frames,
            drivenFrames: outcome.drivenFrames,
            seconds,
            framesPerSecond: outcome.frames / seconds,
          };
      }
      out.push(best!);
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
