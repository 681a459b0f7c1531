/**
 * `media-worker serve` when its worker ends on its own (the NATS connection closed for good, no
 * signal): the daemon's stop still runs, so tracing's last spans are sent and the engine released,
 * and the command fails with the worker's error. The daemon is a stand-in; the command is the real one.
 */
import { Command } from 'commander';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { registerServe } from '../../../src/cli/commands/serve.js';

const { startDaemon } = vi.hoisted(() => ({ startDaemon: vi.fn() }));
vi.mock('../../../src/app/index.js', () => ({ startDaemon, daemonSettings: () => ({ concurrency: {} }) }));
vi.mock('../../../src/cli/context.js', () => ({
  cliContext: () => ({ config: {}, logger: pino({ level: 'silent' }) }),
}));
// No process-wide signal listeners from a test.
vi.mock('../../../src/cli/startup-signals.js', () => ({
  installStartupSignalHandlers: () => undefined,
  handOverSignals: () => undefined,
}));

afterEach(() => {
  process.exitCode = undefined;
  vi.restoreAllMocks();
});

describe('serve, when the worker ends on its own', () => {
  it("runs the daemon's stop (tracing's last flush) and fails with the worker's error", async () => {
    const closed = new Error('NATS connection closed');
    const stop = vi.fn(async () => undefined);
    const stopped = Promise.reject(closed);
    stopped.catch(() => undefined);
    startDaemon.mockResolvedValueOnce({ worker: { healthPort: 0, stopped }, settings: {}, device: {}, stop });
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);

    const program = new Command().exitOverride();
    registerServe(program);
    await program.parseAsync(['serve'], { from: 'user' });

    expect(stop).toHaveBeenCalledTimes(1);
    expect(process.exitCode).toBe(1);
    expect(stderr.mock.calls.map(([text]) => String(text))).toContain('media-worker: NATS connection closed\n');
  });
});
