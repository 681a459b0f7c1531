/**
 * Server-sent events as text (the WHATWG HTML "event stream" format): each event is `id`, `event`
 * and one `data` line of JSON, ended by a blank line; a comment line keeps an idle connection alive.
 */

/** How long a client waits before reconnecting after the stream breaks (the `retry` field). */
export const RECONNECT_DELAY_MS = 3000;

export const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  // Proxies that buffer responses (nginx) would hold events back.
  'x-accel-buffering': 'no',
} as const;

export function sseEvent(id: string, event: string, data: unknown): string {
  // JSON.stringify never writes a raw newline, so one data line holds it.
  return `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export const SSE_HEARTBEAT = ': heartbeat\n\n';

export const SSE_PREAMBLE = `retry: ${RECONNECT_DELAY_MS}\n\n`;
