// Interleaved speed comparison with onnxruntime-node (the engine the project uses).
// usage: node bench.mjs NET HxW ROUNDS RUNS_PER_ROUND variant [variant...]   (variant "fp32" = shipped graph)
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
// The package root (two folders up) and the study's work folder (common.py's WORK).
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORK = process.env.PRECISION_STUDY_DIR ?? `${ROOT}.cache/precision-study`;
import { performance } from 'node:perf_hooks';
const require = createRequire(new URL('../../package.json', import.meta.url));
const ort = require('onnxruntime-node');

const [net, hw, roundsS, perS, ...variants] = process.argv.slice(2);
const [H, W] = hw.split('x').map(Number);
const rounds = Number(roundsS),
  per = Number(perS);
const path = (v) => (v === 'fp32' ? `${ROOT}models/realesrgan-${net}.onnx` : `${WORK}/models/${net}-${v}.onnx`);
const opts = { intraOpNumThreads: 2, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' };

const data = new Float32Array(3 * H * W);
let seed = 1;
for (let i = 0; i < data.length; i++) {
  seed = (seed * 1103515245 + 12345) >>> 0;
  data[i] = (seed >>> 16) % 256;
}
const input = new ort.Tensor('float32', data, [1, 3, H, W]);

const sessions = {};
for (const v of variants) {
  const t = performance.now();
  sessions[v] = await ort.InferenceSession.create(path(v), opts);
  await sessions[v].run({ input }); // warm-up
  console.error(`${v}: load+warmup ${(performance.now() - t).toFixed(0)} ms`);
}
const times = Object.fromEntries(variants.map((v) => [v, []]));
const cpu = Object.fromEntries(variants.map((v) => [v, []])); // process CPU time (user+sys) per run, ms
for (let r = 0; r < rounds; r++) {
  // rotate the order each round so no variant always runs first
  const order = variants.map((_, i) => variants[(i + r) % variants.length]);
  for (const v of order)
    for (let k = 0; k < per; k++) {
      const c = process.cpuUsage();
      const t = performance.now();
      await sessions[v].run({ input });
      times[v].push(performance.now() - t);
      const d = process.cpuUsage(c);
      cpu[v].push((d.user + d.system) / 1000);
    }
}
const med = (a) => {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const base = times[variants[0]];
const out = variants.map((v) => ({
  net,
  input: `1x3x${H}x${W}`,
  variant: v,
  n: times[v].length,
  median_ms: +med(times[v]).toFixed(1),
  min_ms: +Math.min(...times[v]).toFixed(1),
  speedup_median: +(med(base) / med(times[v])).toFixed(2),
  speedup_min: +(Math.min(...base) / Math.min(...times[v])).toFixed(2),
  cpu_median_ms: +med(cpu[v]).toFixed(1),
  cpu_speedup_median: +(med(cpu[variants[0]]) / med(cpu[v])).toFixed(2),
}));
console.log(
  JSON.stringify(
    { ort: ort.env.versions ?? null, loadavg: (await import('node:os')).loadavg(), results: out },
    null,
    1,
  ),
);
