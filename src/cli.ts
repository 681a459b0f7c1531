#!/usr/bin/env node
/**
 * media-worker command line. This entry is kept tiny on purpose: loading the commands (ONNX
 * Runtime, sharp, the NATS client) takes a moment, and `serve` must honour SIGTERM and SIGINT from
 * the first instant (exit 0: nothing to drain yet), so its start-up handlers go in before anything
 * else is loaded. The program itself is src/cli/program.ts.
 */
import { installStartupSignalHandlers } from './cli/startup-signals.js';

// The first word that is neither an option nor the value of the one global option that takes one.
const args = process.argv.slice(2);
const command = args.find((arg, i) => !arg.startsWith('-') && args[i - 1] !== '--log-format');
if (command === 'serve') installStartupSignalHandlers();
await import('./cli/program.js');
