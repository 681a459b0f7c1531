/**
 * pino's JSON lines as short lines for a person at a terminal: `warn: message (key=value, ...)`,
 * the task id first, an error's message instead of its stack. Pure; the logger feeds it line by line.
 */
const LEVELS: Readonly<Record<number, string>> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
};

/** Fields every line carries that a person does not need to read. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'service', 'msg', 'v']);

function show(value: unknown): string {
  if (typeof value === 'string') return /[\s,()=]/.test(value) ? JSON.stringify(value) : value;
  if (value !== null && typeof value === 'object') {
    const message = (value as { message?: unknown }).message;
    if (typeof message === 'string') return JSON.stringify(message);
    return JSON.stringify(value);
  }
  return String(value);
}

export function formatLogLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.trimEnd();
  }
  const level = LEVELS[Number(record['level'])] ?? String(record['level'] ?? 'log');
  const message = typeof record['msg'] === 'string' ? record['msg'] : '';
  const keys = Object.keys(record).filter((k) => !HIDDEN.has(k));
  // The task id leads: it is what ties a line to a job.
  keys.sort((a, b) => Number(b === 'taskId') - Number(a === 'taskId'));
  const details = keys.map((k) => `${k}=${show(record[k])}`).join(', ');
  return `${level}: ${message}${details === '' ? '' : ` (${details})`}`;
}
