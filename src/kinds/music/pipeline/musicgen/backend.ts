/**
 * The `musicgen` backend: in-process text-to-music with MusicGen's ONNX export. Instrumental
 * only, up to 30 s (the decoder's trained window); the two songs are one batch of 2 with
 * different samples. Sessions open on first use and stay open for the next job.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type ort from 'onnxruntime-node';
import { ProcessingError } from '../../../../jobs/index.js';
import {
  noncommercialNotice,
  noncommercialReason,
  openSession,
  type InlineSession,
  type SessionSettings,
} from '../../../../inference/index.js';
import type { GenerateContext, MusicBackend, MusicRequest, RawSong, Readiness } from '../types.js';
import { countLayers, MUSICGEN_FILES, missingDecoderNames } from './contract.js';
import { decodeMusic, type MusicgenSessions } from './decode.js';
import {
  ensureFolder,
  folderLicence,
  missingFiles,
  MusicgenModelMissing,
  readSpec,
  type MusicgenSpec,
} from './folder.js';
import { MUSICGEN_TEST_NAME } from './test-model.js';
import { parseTokenizer, type Tokenizer } from './tokenizer.js';

/** MusicGen's decoder is trained on 30-second windows. */
export const MUSICGEN_MAX_SECONDS = 30;

export interface MusicgenBackendOptions {
  /** The model folder (Xenova layout plus media-worker-model.json). */
  dir: string;
  sessions?: SessionSettings;
  /**
   * Whether weights whose licence forbids commercial use (musicgen-small's CC-BY-NC-4.0) count as
   * ready: MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS for `serve`, always for a one-off command, which
   * logs the licence instead. Default false: a caller that forgets it does not sell them.
   */
  allowNoncommercial?: boolean;
}

interface Loaded {
  spec: MusicgenSpec;
  tokenizer: Tokenizer;
  sessions: MusicgenSessions;
  opened: InlineSession[];
  provider: string;
}

export class MusicgenBackend implements MusicBackend {
  readonly name = 'musicgen';
  readonly capabilities = { vocals: false, lyrics: false, writesLyrics: false, maxSeconds: MUSICGEN_MAX_SECONDS };
  readonly #opts: MusicgenBackendOptions;
  #loaded: Promise<Loaded> | undefined;

  constructor(opts: MusicgenBackendOptions) {
    this.#opts = opts;
  }

  async readiness(): Promise<Readiness> {
    // The test model is generated on first use, so it is always ready.
    if (path.basename(this.#opts.dir) === MUSICGEN_TEST_NAME) return { ready: true };
    const missing = missingFiles(this.#opts.dir);
    if (missing.length > 0)
      return {
        ready: false,
        reason: `MusicGen weights not installed in ${this.#opts.dir} (missing ${missing.join(', ')}; see docs/music.md)`,
      };
    if (this.#opts.allowNoncommercial !== true) {
      const refused = noncommercialReason([
        { name: path.basename(this.#opts.dir), licence: await folderLicence(this.#opts.dir) },
      ]);
      if (refused !== undefined) return { ready: false, reason: refused };
    }
    return { ready: true };
  }

  load(): Promise<Loaded> {
    if (this.#loaded === undefined) {
      this.#loaded = this.#open();
      this.#loaded.catch(() => {
        this.#loaded = undefined;
      });
    }
    return this.#loaded;
  }

  async #open(): Promise<Loaded> {
    const { dir } = this.#opts;
    await ensureFolder(dir);
    const spec = await readSpec(dir);
    const tokenizer = parseTokenizer(
      JSON.parse(await readFile(path.join(dir, MUSICGEN_FILES.tokenizer), 'utf8')) as unknown,
    );
    const settings = this.#opts.sessions ?? {};
    const opened: InlineSession[] = [];
    try {
      for (const file of [MUSICGEN_FILES.textEncoder, MUSICGEN_FILES.decoder, MUSICGEN_FILES.audioDecoder]) {
        opened.push(await openSession(path.join(dir, file), settings));
      }
    } catch (err) {
      await Promise.all(opened.map((s) => s.release()));
      throw err;
    }
    const [text, decoder, audio] = opened as [InlineSession, InlineSession, InlineSession];
    const layers = countLayers(decoder.inputNames);
    const missing = missingDecoderNames(decoder.inputNames, decoder.outputNames, spec.layers);
    if (layers !== spec.layers || missing.length > 0) {
      await Promise.all(opened.map((s) => s.release()));
      throw new MusicgenModelMissing(
        `Expected MusicGen's merged decoder with ${spec.layers} layers in ${dir} but it has ${layers}${missing.length > 0 ? `; missing ${missing.slice(0, 4).join(', ')}` : ''}`,
      );
    }
    const sessions = {
      textEncoder: text.session,
      decoder: decoder.session,
      audioDecoder: audio.session,
    } satisfies Record<string, ort.InferenceSession>;
    return { spec, tokenizer, sessions, opened, provider: decoder.provider };
  }

  async generate(request: MusicRequest, ctx: GenerateContext): Promise<RawSong[]> {
    if (request.lyrics !== undefined) {
      throw new ProcessingError(
        'The musicgen backend makes instrumental music only and cannot sing lyrics: send instrumental: true, or configure a backend with vocals (ace-step, suno-compatible)',
      );
    }
    if (path.basename(this.#opts.dir) !== MUSICGEN_TEST_NAME) {
      const notice = noncommercialNotice([
        { name: path.basename(this.#opts.dir), licence: await folderLicence(this.#opts.dir).catch(() => null) },
      ]);
      if (notice !== undefined) ctx.logger.warn({ backend: this.name }, notice);
    }
    ctx.onProgress({ stage: 'loading model' });
    const loaded = await this.load().catch((cause: unknown) => {
      throw new ProcessingError(`The musicgen backend is not ready: ${(cause as Error).message}`, { cause });
    });
    const { spec } = loaded;
    const frameRate = spec.sampleRate / spec.hop;
    const seconds = Math.min(request.seconds, MUSICGEN_MAX_SECONDS, spec.maxFrames / frameRate);
    const frames = Math.max(1, Math.round(seconds * frameRate));
    const tokens = loaded.tokenizer.encode(request.description);
    ctx.logger.info({ frames, seconds, textTokens: tokens.length, provider: loaded.provider }, 'musicgen generating');
    const songs = await decodeMusic(loaded.sessions, spec, {
      tokens,
      batch: request.songs,
      frames,
      seed: request.seed,
      signal: ctx.signal,
      onStep: (done, total) => ctx.onProgress({ stage: 'generating', done, total, unit: 'steps' }),
    });
    return songs.map((samples) => ({
      audio: { kind: 'pcm', sampleRate: spec.sampleRate, channels: spec.channels, samples },
    }));
  }

  async release(): Promise<void> {
    const loaded = this.#loaded;
    this.#loaded = undefined;
    if (loaded === undefined) return;
    const value = await loaded.catch(() => undefined);
    if (value !== undefined) await Promise.all(value.opened.map((s) => s.release()));
  }
}
