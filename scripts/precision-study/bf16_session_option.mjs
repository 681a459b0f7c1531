// Is the session option mlas.enable_gemm_fastmath_arm64_bfloat16 accepted / effective on x86?
// usage: node bf16_session_option.mjs ROUNDS   (x4fast 64x64, fp32 graph, with and without the option, interleaved)
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
// The package root (two folders up) and the study's work folder (common.py's WORK).
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const WORK = process.env.PRECISION_STUDY_DIR ?? `${ROOT}.cache/precision-study`;
import { performance } from 'node:perf_hooks';
const ort = createRequire(new URL('../../package.json', import.meta.url))('onnxruntime-node');
const base = { intraOpNumThreads: 2, interOpNumThreads: 1, graphOptimizationLevel: 'all' };
const model = `${ROOT}models/realesrgan-x4fast.onnx`;
const a = await ort.InferenceSession.create(model, base);
const b = await ort.InferenceSession.create(model, {
  ...base,
  extra: { mlas: { enable_gemm_fastmath_arm64_bfloat16: '1' } },
});
const data = new Float32Array(3 * 64 * 64).map((_, i) => (i * 37) % 256);
const input = new ort.Tensor('float32', data, [1, 3, 64, 64]);
const ya = (await a.run({ input })).output.data,
  yb = (await b.run({ input })).output.data;
let maxd = 0;
for (let i = 0; i < ya.length; i++) maxd = Math.max(maxd, Math.abs(ya[i] - yb[i]));
const ta = [],
  tb = [];
for (let r = 0; r < Number(process.argv[2] || 5); r++)
  for (const [s, t] of r % 2
    ? [
        [a, ta],
        [b, tb],
      ]
    : [
        [b, tb],
        [a, ta],
      ]) {
    const t0 = performance.now();
    await s.run({ input });
    t.push(performance.now() - t0);
  }
const med = (x) => [...x].sort((p, q) => p - q)[x.length >> 1];
console.log(
  JSON.stringify({
    option_accepted: true,
    max_abs_output_diff: maxd,
    fp32_median_ms: med(ta),
    with_option_median_ms: med(tb),
  }),
);
