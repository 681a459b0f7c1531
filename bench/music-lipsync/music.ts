/**
 * Music benchmark: the real-time factor of the musicgen backend (seconds of audio made per second
 * of compute; both songs of the batch count), for the generated TEST model and, when installed,
 * the real weights; and what the shared finishing stage (two MP3s, ffprobe checks, two covers)
 * adds. The test model's figures measure the decoding loop and the ONNX Runtime calls with a
 * full-size 24-layer cache, not music quality.
 *
 *   media-worker bench music --help
 *
 * Prints one JSON line per run; --write-docs also puts them in docs/benchmarks/lipsync-and-music.md as a table between
 * <!-- bench:music begin/end --> (bench/doc-block.ts).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { parseExecutionProviders, defaultModelsDir } from '../../src/inference/index.js';
import {
  finishSongs,
  MusicgenBackend,
  MUSICGEN_TEST_NAME,
  toMusicRequest,
} from '../../src/kinds/music/pipeline/index.js';
import { TABLES } from '../blocks.js';
import { describeMachine, machineInfo } from '../common.js';
import { benchCli } from '../harness.js';
import { docsTarget, writeDocsBlock } from '../doc-block.js';

const cli = benchCli({
  name: 'music',
  options: { seconds: { type: 'string', arg: 'S', help: 'seconds of each song', default: '5' } },
  common: {
    model: {
      default: `${MUSICGEN_TEST_NAME},musicgen-small`,
      help: 'musicgen model folders (musicgen-test is generated; others installed by scripts/install-musicgen-model.ts)',
    },
    providers: { default: 'cpu' },
    threads: { default: '0' },
    repeat: { default: '2', help: 'runs of each model (every run is reported)' },
  },
});
const values = cli.values;
const target = await docsTarget('music', values);
const machine = describeMachine(machineInfo());
const table: string[][] = [];

const seconds = Number(values.seconds);
const repeat = Number(values.repeat);
const logger = pino({ level: 'silent' });
const work = await mkdtemp(path.join(os.tmpdir(), 'bench-music-'));
try {
  for (const name of values.model.split(',').map((s) => s.trim())) {
    const dir = name === MUSICGEN_TEST_NAME ? path.join(work, MUSICGEN_TEST_NAME) : path.join(defaultModelsDir(), name);
    if (name !== MUSICGEN_TEST_NAME && !existsSync(path.join(dir, 'media-worker-model.json'))) {
      console.log(
        JSON.stringify({ model: name, skipped: `not installed in ${dir} (scripts/install-musicgen-model.ts)` }),
      );
      continue;
    }
    const backend = new MusicgenBackend({
      dir,
      sessions: { executionProviders: parseExecutionProviders(values.providers), threads: Number(values.threads) },
    });
    const t0 = performance.now();
    await backend.load();
    const loadMs = performance.now() - t0;
    for (let run = 1; run <= repeat; run += 1) {
      const request = toMusicRequest(
        { custom_mode: false, prompt: 'calm lo-fi piano with soft drums', instrumental: true },
        { taskId: `bench-${run}`, seconds },
      );
      let steps = 0;
      const start = performance.now();
      const raw = await backend.generate(request, {
        dir: work,
        signal: new AbortController().signal,
        logger,
        onProgress: (p) => (steps = p.done ?? steps),
      });
      const generateS = (performance.now() - start) / 1000;
      const finishStart = performance.now();
      await finishSongs(request, raw, { dir: work, taskId: `bench-${run}`, store: async () => ({ url: 'unused' }) });
      const finishS = (performance.now() - finishStart) / 1000;
      const audioS = raw.reduce(
        (sum, s) => sum + (s.audio.kind === 'pcm' ? s.audio.samples.length / s.audio.sampleRate : 0),
        0,
      );
      table.push([
        name,
        String(run),
        String(raw.length),
        String(seconds),
        (loadMs / 1000).toFixed(2),
        String(steps),
        (steps / generateS).toFixed(1),
        generateS.toFixed(2),
        (audioS / generateS).toFixed(3),
        finishS.toFixed(2),
        (audioS / (generateS + finishS)).toFixed(3),
      ]);
      console.log(
        JSON.stringify({
          model: name,
          run,
          providers: values.providers,
          cores: os.availableParallelism(),
          loadS: Number((loadMs / 1000).toFixed(2)),
          songs: raw.length,
          secondsPerSong: seconds,
          steps,
          stepsPerS: Number((steps / generateS).toFixed(1)),
          generateS: Number(generateS.toFixed(2)),
          realTimeFactor: Number((audioS / generateS).toFixed(3)),
          finishS: Number(finishS.toFixed(2)),
          realTimeFactorWithFinish: Number((audioS / (generateS + finishS)).toFixed(3)),
        }),
      );
    }
    await backend.release();
  }
  if (table.length > 0) {
    const caption = `Providers ${values.providers}, ${os.availableParallelism()} cores; musicgen-test is the generated test model (timings of the decoding loop, not of music quality):`;
    await writeDocsBlock(target, 'music', [{ caption, header: TABLES.music.header, rows: table }], machine);
    await cli.done({ tables: [{ caption, header: TABLES.music.header, rows: table }] });
  } else {
    await cli.done({});
  }
} finally {
  await rm(work, { recursive: true, force: true });
}
