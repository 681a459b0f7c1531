/**
 * Lip-sync's runtime half: src/lipsync/'s pipeline, the network each model id maps to (manifest,
 * weights, loadable with Wav2Lip's contract) and the face detector, ffmpeg, its disk need, warm-up.
 * Installing lip-sync weights on a running host makes it serve lip-sync without a restart: its
 * checks run again every WORKER_READINESS_INTERVAL_MS.
 */
import path from 'node:path';
import type { Config } from '../../config.js';
import { LIPSYNC_MODEL_IDS, lipsyncSecondsPerFrame, type HardwareProfile, type LipsyncPolicy } from '../../jobs/index.js';
import { DEFAULT_MAX_OUTPUT_SECONDS, FACE_DETECTION_PROFILES, LIPSYNC_MODEL_GENERATORS, lipsyncFile, loadBlazeFace, loadLipsyncModel, loadThreadedLipsyncModel, releaseLipsyncThreads } from '../../lipsync/index.js';
import { definedFields } from '../../defined-fields.js';
import type { KindRuntime } from '../kind-runtime.js';
import { registryOptions } from '../layer-options.js';
import { VIDEO_OUTPUT_BYTES_PER_SECOND, check, ffmpegReadiness } from '../readiness-checks.js';

/** The face detectors the profiles use, each once. */
const faceDetectors = (): Set<string> => new Set(Object.values(FACE_DETECTION_PROFILES).map((p) => p.model));

export const lipsyncRuntime: KindRuntime<'lipsync'> = {
  async run(quoted, { dir, engine, opts, binaries, withSignal }) {
    const { config } = engine;
    const outputPath = path.join(dir, 'output.mp4');
    const { job } = quoted;
    const outcome = await lipsyncFile(
      {
        videoPath: quoted.inputs.video.path,
        videoInfo: quoted.probes.video,
        audioPath: quoted.inputs.audio.path,
        audioInfo: quoted.probes.audio,
        outputPath,
        model: job.model,
        syncMode: job.input.sync_mode,
        activeSpeaker: job.input.active_speaker,
        hdr: job.input.hdr ?? config.videoHdr,
        encoder: { codec: config.videoEncoder, crf: config.videoCrf, preset: config.videoPreset },
        ...withSignal,
        onProgress: (p) => opts.onProgress?.(p),
        logger: opts.logger,
      },
      {
        sessions: engine.inlineSessions,
        lipsyncModelMapping: config.lipsyncModels,
        loadSrModel: engine.loadSrModel,
        registry: registryOptions(config),
        ...binaries,
      },
    );
    opts.logger.info(
      { network: outcome.network, frames: outcome.frames, drivenFrames: outcome.drivenFrames, durationSeconds: outcome.durationSeconds },
      'lip-sync done',
    );
    const stored = await opts.store(outputPath, { taskId: opts.taskId, ext: 'mp4', kind: 'lipsync' });
    return { url: stored.url, type: 'video', duration: outcome.durationSeconds };
  },
  readiness(ctx) {
    const registry = registryOptions(ctx.config);
    const sessions = ctx.engine.inlineSessions;
    return [
      ffmpegReadiness(ctx),
      check('lipsync-model', async () => {
        for (const id of LIPSYNC_MODEL_IDS) await loadLipsyncModel(id, { sessions, mapping: ctx.config.lipsyncModels, registry });
      }),
      check('face-detector', async () => {
        for (const model of faceDetectors()) await loadBlazeFace(model, { sessions, registry });
      }),
    ];
  },
  diskNeed(config) {
    const output = DEFAULT_MAX_OUTPUT_SECONDS * VIDEO_OUTPUT_BYTES_PER_SECOND;
    return { temp: config.maxVideoBytes + config.maxAudioBytes + output, results: output };
  },
  warm(ctx) {
    const { engine } = ctx;
    const registry = registryOptions(engine.config);
    for (const id of LIPSYNC_MODEL_IDS) {
      ctx.step(`lipsync ${id}`, () => loadThreadedLipsyncModel(id, { sessions: engine.inlineSessions, registry, ...definedFields({ mapping: engine.config.lipsyncModels }) }));
    }
    for (const model of faceDetectors()) ctx.step(`face detector ${model}`, () => loadBlazeFace(model, { sessions: engine.inlineSessions, registry }));
    ctx.sr('mouth', '4');
  },
  // Its networks run on threads of their own (loadThreadedLipsyncModel).
  release: () => releaseLipsyncThreads(),
  usesExecutionProvider: true,
  // Always MP4 (video/result-container.ts), whatever the input's container.
  resultExtension: async () => 'mp4',
  modelGenerators: LIPSYNC_MODEL_GENERATORS,
};

/** Lip-sync's part of the quote policy: its output limit from the settings, its cost per frame on this host. */
export function lipsyncPolicy(config: Config, hardware: HardwareProfile): LipsyncPolicy {
  return { maxOutputPercent: config.lipsyncMaxOutputPercent, secondsPerFrame: lipsyncSecondsPerFrame(hardware) };
}
