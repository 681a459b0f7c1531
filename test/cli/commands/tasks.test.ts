/**
 * The line `media-worker tasks watch` prints for a progress event, with its ETA and a long unit's
 * clock (`step`), and the same line from examples/python/follow_task.py (skipped where python3 is
 * missing): both read the same events.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { progressLine, spokenDuration } from '../../../src/cli/commands/tasks.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { hasPython } from '../../helpers/python.js';

const LINES: [Record<string, unknown>, string][] = [
  [{ stage: 'fetching and probing' }, 'fetching and probing'],
  [{ stage: 'upscaling', done: 0, total: 30, unit: 'tiles', percent: 0 }, 'upscaling 0/30 tiles 0 %'],
  [
    { stage: 'upscaling', done: 12, total: 30, unit: 'tiles', percent: 40, etaSeconds: 18 },
    'upscaling 12/30 tiles 40 %, about 18 s left',
  ],
  [
    { stage: 'upscaling', done: 30, total: 30, unit: 'tiles', percent: 100, etaSeconds: 0 },
    'upscaling 30/30 tiles 100 %, about 0 s left',
  ],
  [
    { stage: 'upscaling', done: 360, total: 1440, unit: 'frames', percent: 25, etaSeconds: 125 },
    'upscaling 360/1440 frames 25 %, about 2 min 5 s left',
  ],
  [
    { stage: 'lip-syncing', done: 10, total: 9000, unit: 'frames', percent: 0.1, etaSeconds: 4800 },
    'lip-syncing 10/9000 frames 0.1 %, about 1 h 20 min left',
  ],
  // Half a minute rounds up in both (Python's round() alone would go to the even minute: 1 h).
  [
    { stage: 'lip-syncing', done: 20, total: 9000, unit: 'frames', percent: 0.2, etaSeconds: 3630 },
    'lip-syncing 20/9000 frames 0.2 %, about 1 h 1 min left',
  ],
  // One unit running long: its clock (`step`) after the counts, as a local run shows it.
  [
    {
      stage: 'upscaling',
      done: 0,
      total: 1,
      unit: 'tiles',
      percent: 0,
      step: { index: 1, elapsedSeconds: 48, estimatedSeconds: 59 },
    },
    'upscaling 0/1 tiles 0 %, tile 1 running 48.0s of ~59.0s estimated',
  ],
  [
    {
      stage: 'upscaling',
      done: 3,
      total: 8,
      unit: 'tiles',
      percent: 37.5,
      etaSeconds: 300,
      step: { index: 4, elapsedSeconds: 209, estimatedSeconds: 59 },
    },
    'upscaling 3/8 tiles 37.5 %, about 5 min left, tile 4 running 3m29s, 2m30s past its ~59.0s estimate: still working (a busy machine is slower)',
  ],
  [{ stage: 'encoding', step: { index: 1, elapsedSeconds: 7 } }, 'encoding, step 1 running 7.0s'],
  // A step out of the schema's bounds is the sender's error: dropped whole, the rest of the line kept.
  [{ stage: 'encoding', percent: 50, step: { index: 1, elapsedSeconds: 90_000 } }, 'encoding 50 %'],
  [{ stage: 'encoding', step: { index: 0, elapsedSeconds: 3 } }, 'encoding'],
  [{ stage: 'encoding', step: { index: 1, elapsedSeconds: 3, estimatedSeconds: null } }, 'encoding'],
];

describe('tasks watch progress lines', () => {
  it.each(LINES)('%o -> %s', (data, line) => {
    expect(progressLine(JSON.stringify(data))).toBe(line);
  });

  it.each([
    [0, '0 s'],
    [59, '59 s'],
    [60, '1 min'],
    [3599, '59 min 59 s'],
    [3600, '1 h'],
    [3630, '1 h 1 min'],
    [7170, '2 h'],
    [86_400, '24 h'],
  ])('%i seconds are said as %s', (seconds, said) => {
    expect(spokenDuration(seconds)).toBe(said);
  });

  it.skipIf(!hasPython)('the Python example prints the same lines', () => {
    const script = [
      'import json, sys',
      `sys.path.insert(0, ${JSON.stringify(path.join(PACKAGE_ROOT, 'examples', 'python'))})`,
      'from follow_task import progress_line',
      'print(json.dumps([progress_line(json.dumps(d)) for d in json.load(sys.stdin)]))',
    ].join('\n');
    const out = execFileSync('python3', ['-B', '-c', script], {
      input: JSON.stringify(LINES.map(([data]) => data)),
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(JSON.parse(out)).toEqual(LINES.map(([, line]) => line));
  });
});
