/**
 * Lip-sync's runtime half: the configured backends (MEDIA_WORKER_LIPSYNC_BACKENDS, in the
 * operator's order; src/kinds/lipsync/pipeline/backends/): `wav2lip`, src/kinds/lipsync/pipeline/'s pipeline with the network each
 * model id maps to (manifest, weights, loadable with Wav2Lip's contract) and the face detector; and
 * `sync-compatible`, a provider speaking sync.so's v2 API. A job goes to the first that serves its
 * model and is ready; what it makes is stored and billed the same way whichever made it, at the
 * quote's price. Installing lip-sync weights on a running host makes it serve lip-sync without a
 * restart: its checks run again every WORKER_READINESS_INTERVAL_MS.
 *
 * Licences (docs/lipsync.md, "Licences"): a `serve` process does not take wav2lip while one of its
 * networks forbids commercial use, unless MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS=1; the one-off
 * commands run it for a person's own use, with a line naming the licence.
 */
import path from 'node:path';
import type { Config } from '../../config.js';
import {
  LIPSYNC_MODEL_IDS,
  ProcessingError,
  lipsyncSecondsPerFrame,
  type HardwareProfile,
  type LipsyncPolicy,
} from '../../jobs/index.js';
import { noncommercialNotice, noncommercialReason, type LicenceFacts } from '../../inference/index.js';
import type { HdrMode } from '../../video/index.js';
import {
  DEFAULT_MAX_OUTPUT_SECONDS,
  FACE_DETECTION_PROFILES,
  LIPSYNC_MODEL_GENERATORS,
  SyncBackend,
  chooseLipsyncBackend,
  lipsyncFile,
  lipsyncReadiness,
  loadBlazeFace,
  loadLipsyncModel,
  loadThreadedLipsyncModel,
  releaseLipsyncThreads,
  type BackendReadiness,
  type BackendStatus,
  type LipsyncBackend,
} from './pipeline/index.js';
import { definedFields } from '../../defined-fields.js';
import type { Engine, KindRuntime, PipelineContext } from '../../app/kind-runtime.js';
import { inputFetchOptions, registryOptions } from '../../app/layer-options.js';
import { VIDEO_OUTPUT_BYTES_PER_SECOND, ffmpegReadiness } from '../../app/readiness-checks.js';

/** The face detectors the profiles use, each once. */
const faceDetectors = (): Set<string> => new Set(Object.values(FACE_DETECTION_PROFILES).map((p) => p.model));

/** What lip-sync keeps open between jobs (`engine.kinds`): the provider backend, whose key is checked once. */
export interface LipsyncStates {
  lipsyncProvider?: SyncBackend | undefined;
}

type Network = { name: string; licence: LicenceFacts | null };

/** What the last readiness check found of each backend, per engine (capabilities report it). */
const lastStatuses = new WeakMap<object, BackendStatus[]>();

/** The networks wav2lip runs, loaded once per engine (a failure is tried again at the next check). */
const loadedNetworks = new WeakMap<object, Network[]>();

async function wav2lipNetworks(engine: Engine<LipsyncStates>): Promise<Network[]> {
  const known = loadedNetworks.get(engine);
  if (known !== undefined) return known;
  const registry = registryOptions(engine.config);
  const sessions = engine.inlineSessions;
  const networks: Network[] = [];
  for (const id of LIPSYNC_MODEL_IDS) {
    const model = await loadLipsyncModel(id, { sessions, mapping: engine.config.lipsyncModels, registry });
    networks.push({ name: model.name, licence: model.manifest.licence });
  }
  for (const name of faceDetectors()) {
    const detector = await loadBlazeFace(name, { sessions, registry });
    networks.push({ name, licence: detector.manifest.licence });
  }
  loadedNetworks.set(engine, networks);
  return networks;
}

/**
 * The in-process backend over this engine. `allowNoncommercial`: the setting for `serve`; always
 * true for a one-off command (cli/context.ts), which logs the licence instead.
 */
function wav2lipBackend(engine: Engine<LipsyncStates>, job?: JobSettings): LipsyncBackend {
  const { config } = engine;
  const readiness = async (): Promise<BackendReadiness> => {
    let networks: Network[];
    try {
      networks = await wav2lipNetworks(engine);
    } catch (err) {
      return { ready: false, reason: (err as Error).message.split('\n', 1)[0] ?? '' };
    }
    const refused = config.allowNoncommercialModels ? undefined : noncommercialReason(networks);
    return refused === undefined ? { ready: true } : { ready: false, reason: refused };
  };
  return {
    name: 'wav2lip',
    models: () => LIPSYNC_MODEL_IDS,
    readiness,
    async run(req) {
      const notice = noncommercialNotice(await wav2lipNetworks(engine));
      if (notice !== undefined) req.logger.warn({ backend: 'wav2lip' }, notice);
      const outcome = await lipsyncFile(
        {
          videoPath: req.videoPath,
          videoInfo: req.videoInfo,
          audioPath: req.audioPath,
          audioInfo: req.audioInfo,
          outputPath: req.outputPath,
          model: req.model,
          syncMode: req.syncMode,
          activeSpeaker: req.activeSpeaker,
          hdr: job?.hdr ?? config.videoHdr,
          encoder: { codec: config.videoEncoder, crf: config.videoCrf, preset: config.videoPreset },
          signal: req.signal,
          onProgress: (p) => req.onProgress(p),
          logger: req.logger,
        },
        {
          sessions: engine.inlineSessions,
          lipsyncModelMapping: config.lipsyncModels,
          loadSrModel: engine.loadSrModel,
          registry: registryOptions(config),
          ...(job?.binaries ?? {}),
        },
      );
      return {
        outputPath: outcome.outputPath,
        durationSeconds: outcome.durationSeconds,
        details: {
          backend: 'wav2lip',
          network: outcome.network,
          frames: outcome.frames,
          drivenFrames: outcome.drivenFrames,
        },
      };
    },
  };
}

/** What the in-process backend takes from one job: its HDR choice and the binaries. */
interface JobSettings {
  hdr?: HdrMode | undefined;
  binaries: PipelineContext['binaries'];
}

/** The configured backends, in the operator's order. */
export function lipsyncBackends(engine: Engine<LipsyncStates>, job?: JobSettings): LipsyncBackend[] {
  return engine.config.lipsyncBackends.flatMap((name): LipsyncBackend[] => {
    if (name === 'wav2lip') return [wav2lipBackend(engine, job)];
    return engine.kinds.lipsyncProvider === undefined ? [] : [engine.kinds.lipsyncProvider];
  });
}

export const lipsyncRuntime: KindRuntime<'lipsync', LipsyncStates> = {
  async run(quoted, ctx) {
    const { dir, engine, opts } = ctx;
    const outputPath = path.join(dir, 'output.mp4');
    const { job } = quoted;
    const signal = ctx.withSignal.signal ?? new AbortController().signal;
    const backends = lipsyncBackends(engine, { hdr: job.input.hdr, binaries: ctx.binaries });
    const choice = await chooseLipsyncBackend(backends, job.model, signal);
    if (choice.backend === undefined) {
      throw new ProcessingError(
        `No lip-sync backend can serve ${job.model} now: ${choice.passed.join('; ') || 'none configured (MEDIA_WORKER_LIPSYNC_BACKENDS)'}`,
      );
    }
    const outcome = await choice.backend.run({
      taskId: opts.taskId,
      model: job.model,
      syncMode: job.input.sync_mode,
      activeSpeaker: job.input.active_speaker,
      videoSource: job.input.video_url,
      audioSource: job.input.audio_url,
      videoPath: quoted.inputs.video.path,
      videoInfo: quoted.probes.video,
      audioPath: quoted.inputs.audio.path,
      audioInfo: quoted.probes.audio,
      dir,
      outputPath,
      signal,
      timeLimitMs: engine.timeLimitsMs.lipsync,
      logger: opts.logger,
      onProgress: (p) => opts.onProgress?.(p),
    });
    opts.logger.info(
      { ...outcome.details, durationSeconds: outcome.durationSeconds, passed: choice.passed },
      'lip-sync done',
    );
    const stored = await opts.store(outcome.outputPath, { taskId: opts.taskId, ext: 'mp4', kind: 'lipsync' });
    return { url: stored.url, type: 'video', duration: outcome.durationSeconds };
  },
  readiness(ctx) {
    return [
      ffmpegReadiness(ctx),
      {
        name: 'lipsync-backend',
        run: async () => {
          const r = await lipsyncReadiness(lipsyncBackends(ctx.engine));
          lastStatuses.set(ctx.engine, r.backends);
          return r.ready ? null : (r.reason ?? 'no lip-sync backend is ready');
        },
      },
    ];
  },
  backends: (engine) => lastStatuses.get(engine),
  diskNeed(config) {
    const output = DEFAULT_MAX_OUTPUT_SECONDS * VIDEO_OUTPUT_BYTES_PER_SECOND;
    return { temp: config.maxVideoBytes + config.maxAudioBytes + output, results: output };
  },
  warm(ctx) {
    const { engine } = ctx;
    // Only a host that runs the networks opens them.
    if (!engine.config.lipsyncBackends.includes('wav2lip')) return;
    const registry = registryOptions(engine.config);
    for (const id of LIPSYNC_MODEL_IDS) {
      ctx.step(`lipsync ${id}`, () =>
        loadThreadedLipsyncModel(id, {
          sessions: engine.inlineSessions,
          registry,
          ...definedFields({ mapping: engine.config.lipsyncModels }),
        }),
      );
    }
    for (const model of faceDetectors())
      ctx.step(`face detector ${model}`, () => loadBlazeFace(model, { sessions: engine.inlineSessions, registry }));
    ctx.sr('mouth', '4');
  },
  // Its networks run on threads of their own (loadThreadedLipsyncModel).
  release: () => releaseLipsyncThreads(),
  usesExecutionProvider: true,
  // Always MP4 (video/result-container.ts), whatever the input's container.
  resultExtension: async () => 'mp4',
  modelGenerators: LIPSYNC_MODEL_GENERATORS,
};

/** The provider backend when MEDIA_WORKER_LIPSYNC_BACKENDS lists it, with the fetch rules of the job inputs for its output. */
export function openLipsyncProvider(config: Config): SyncBackend | undefined {
  if (!config.lipsyncBackends.includes('sync-compatible')) return undefined;
  return new SyncBackend({
    baseUrl: config.syncBaseUrl,
    ...definedFields({ apiKey: config.syncApiKey, ffprobePath: config.ffprobePath }),
    models: config.syncModels,
    pollIntervalMs: config.syncPollIntervalMs,
    fetch: inputFetchOptions(config),
  });
}

/** Lip-sync's part of the quote policy: its output limit from the settings, its cost per frame on this host. */
export function lipsyncPolicy(config: Config, hardware: HardwareProfile): LipsyncPolicy {
  // A host that only sends lip-sync to the provider runs no network per frame: the provider's time
  // is not this host's to estimate (the 4-minute limit still ends a generation that runs over).
  const local = config.lipsyncBackends.includes('wav2lip');
  return {
    maxOutputPercent: config.lipsyncMaxOutputPercent,
    secondsPerFrame: local ? lipsyncSecondsPerFrame(hardware) : 0,
  };
}
