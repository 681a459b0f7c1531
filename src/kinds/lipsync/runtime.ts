/**
 * Lip-sync's runtime half: the configured backends (MEDIA_WORKER_LIPSYNC_BACKENDS, in the
 * operator's order; src/kinds/lipsync/pipeline/backends/): `musetalk` and `wav2lip`,
 * src/kinds/lipsync/pipeline/'s pipeline on the network each model id maps to
 * (MEDIA_WORKER_LIPSYNC_MODELS: a MuseTalk 1.5 export, or a network with Wav2Lip's contract; each
 * backend serves the ids mapped to its network), both with the face detector; and `sync-compatible`, a provider
 * speaking sync.so's v2 API. A job goes to the first that serves its model and is ready; what it
 * makes is stored and billed the same way whichever made it, at the quote's price. Installing
 * lip-sync weights on a running host makes it serve lip-sync without a restart: its checks run
 * again every WORKER_READINESS_INTERVAL_MS.
 *
 * Licences (docs/lipsync.md, "Licences"): a `serve` process does not take an in-process backend
 * while one of its networks forbids commercial use (Wav2Lip's does, MuseTalk's does not), unless
 * MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS=1; the one-off commands run it for a person's own use,
 * with a line naming the licence.
 */
import path from 'node:path';
import type { Config } from '../../config.js';
import { ProcessingError, lipsyncSecondsPerFrame, type HardwareProfile, type LipsyncPolicy } from '../../jobs/index.js';
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
  loadThreadedLipsyncModel,
  releaseLipsyncThreads,
  releaseMuseTalkThreads,
  type BackendReadiness,
  type BackendStatus,
  type LipsyncBackend,
  type LipsyncBackendRequest,
  type LipsyncNetworkName,
  loadMuseTalkEngine,
} from './pipeline/index.js';
import { manifestsOnNetwork, modelsOnNetwork } from './settings.js';
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

/** The networks MuseTalk runs, loaded once per engine as wav2lip's are. */
const loadedMuseTalk = new WeakMap<object, Network[]>();

async function detectorNetworks(engine: Engine<LipsyncStates>): Promise<Network[]> {
  const registry = registryOptions(engine.config);
  const networks: Network[] = [];
  for (const name of faceDetectors()) {
    const detector = await loadBlazeFace(name, { sessions: engine.inlineSessions, registry });
    networks.push({ name, licence: detector.manifest.licence });
  }
  return networks;
}

async function wav2lipNetworks(engine: Engine<LipsyncStates>): Promise<Network[]> {
  const known = loadedNetworks.get(engine);
  if (known !== undefined) return known;
  const registry = registryOptions(engine.config);
  const sessions = engine.inlineSessions;
  const networks: Network[] = [];
  for (const id of modelsOnNetwork(engine.config.lipsyncModels, 'wav2lip')) {
    const model = await loadThreadedLipsyncModel(id, { sessions, mapping: engine.config.lipsyncModels, registry });
    networks.push({ name: model.name, licence: model.manifest.licence });
  }
  networks.push(...(await detectorNetworks(engine)));
  loadedNetworks.set(engine, networks);
  return networks;
}

/** MuseTalk's engines (graphs verified, sessions open) and the detector; each manifest records every part's licence. */
async function museTalkNetworks(engine: Engine<LipsyncStates>): Promise<Network[]> {
  const known = loadedMuseTalk.get(engine);
  if (known !== undefined) return known;
  const { config } = engine;
  const networks: Network[] = [];
  for (const name of manifestsOnNetwork(config.lipsyncModels, 'musetalk')) {
    const { manifest } = await loadMuseTalkEngine(name, {
      sessions: engine.inlineSessions,
      registry: registryOptions(config),
      batch: config.museTalkBatch,
    });
    networks.push({
      name: manifest.name,
      licence: {
        spdx: [...new Set(manifest.licences.map((l) => l.spdx))].join(' AND '),
        commercialUse: manifest.commercialUse.allowed,
      },
    });
  }
  networks.push(...(await detectorNetworks(engine)));
  loadedMuseTalk.set(engine, networks);
  return networks;
}

/**
 * An in-process backend over this engine: `network` runs the ids mapped to its manifests. Not ready
 * while a network it needs is missing, or, for `serve` (MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS
 * off), while one's licence forbids commercial use; a one-off command (cli/context.ts) always
 * allows them and logs the licence instead.
 */
function inProcessBackend(
  engine: Engine<LipsyncStates>,
  network: LipsyncNetworkName,
  job?: JobSettings,
): LipsyncBackend {
  const { config } = engine;
  const networksOf = network === 'musetalk' ? museTalkNetworks : wav2lipNetworks;
  const models = modelsOnNetwork(config.lipsyncModels, network);
  const readiness = async (): Promise<BackendReadiness> => {
    let networks: Network[];
    try {
      networks = await networksOf(engine);
    } catch (err) {
      return { ready: false, reason: (err as Error).message.split('\n', 1)[0] ?? '' };
    }
    const refused = config.allowNoncommercialModels ? undefined : noncommercialReason(networks);
    return refused === undefined ? { ready: true } : { ready: false, reason: refused };
  };
  return {
    name: network,
    models: () => models,
    readiness,
    async run(req) {
      const notice = noncommercialNotice(await networksOf(engine));
      if (notice !== undefined) req.logger.warn({ backend: network }, notice);
      return runPipeline(engine, network, req, job);
    },
  };
}

/** The job through src/kinds/lipsync/pipeline/'s pipeline on `network`. */
async function runPipeline(
  engine: Engine<LipsyncStates>,
  network: LipsyncNetworkName,
  req: LipsyncBackendRequest,
  job: JobSettings | undefined,
): Promise<Awaited<ReturnType<LipsyncBackend['run']>>> {
  const { config } = engine;
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
      ...(network === 'musetalk' ? { batch: config.museTalkBatch } : {}),
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
      backend: network,
      network: outcome.network,
      frames: outcome.frames,
      drivenFrames: outcome.drivenFrames,
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
    if (name === 'wav2lip' || name === 'musetalk') return [inProcessBackend(engine, name, job)];
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
    const { config } = engine;
    const registry = registryOptions(config);
    const sessions = engine.inlineSessions;
    // Only a host that runs the networks opens them.
    if (config.lipsyncBackends.includes('musetalk')) {
      for (const name of manifestsOnNetwork(config.lipsyncModels, 'musetalk'))
        ctx.step(`lipsync musetalk ${name}`, () =>
          loadMuseTalkEngine(name, { sessions, registry, batch: config.museTalkBatch }),
        );
    }
    if (config.lipsyncBackends.includes('wav2lip')) {
      for (const id of modelsOnNetwork(config.lipsyncModels, 'wav2lip')) {
        ctx.step(`lipsync ${id}`, () =>
          loadThreadedLipsyncModel(id, { sessions, registry, ...definedFields({ mapping: config.lipsyncModels }) }),
        );
      }
    }
    if (!config.lipsyncBackends.some((name) => name === 'wav2lip' || name === 'musetalk')) return;
    for (const model of faceDetectors())
      ctx.step(`face detector ${model}`, () => loadBlazeFace(model, { sessions, registry }));
    ctx.sr('mouth', '4');
  },
  // Its networks run on threads of their own (loadThreadedLipsyncModel, MuseTalk's graph-threads.ts).
  release: async () => {
    await Promise.all([releaseLipsyncThreads(), releaseMuseTalkThreads()]);
  },
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
  const local = config.lipsyncBackends.includes('wav2lip') || config.lipsyncBackends.includes('musetalk');
  return {
    maxOutputPercent: config.lipsyncMaxOutputPercent,
    secondsPerFrame: local ? lipsyncSecondsPerFrame(hardware) : 0,
  };
}
