import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // Media and ONNX tests spawn ffmpeg and run real networks on a 2-core CI machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most files spend their time waiting on nats-server, child processes and the network, not on
    // the CPU: vitest's default (cores - 1) ran them one at a time on CI's 2 cores (issue 47). At most
    // 8: each file's networks take every core, and a big host gains little past that.
    maxWorkers: Math.min(Math.max(availableParallelism() + 1, 2), 8),
  },
});
