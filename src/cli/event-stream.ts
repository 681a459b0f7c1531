/**
 * Reads server-sent events (the WHATWG "event stream" format) from a response body: the events
 * with their id, name and data; comment lines (heartbeats) and `retry` are skipped.
 */

export interface ServerSentEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/** The events of `body`, in order, until it ends. */
export async function* serverSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let buffered = '';
  let event: { id: string | undefined; name: string; data: string[] } = { id: undefined, name: '', data: [] };
  for await (const chunk of body) {
    buffered += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffered.search(/\r\n|\r|\n/)) >= 0) {
      const line = buffered.slice(0, end);
      buffered = buffered.slice(end + (buffered.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (event.data.length > 0) yield { id: event.id, event: event.name || 'message', data: event.data.join('\n') };
        event = { id: undefined, name: '', data: [] };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'data') event.data.push(value);
      else if (field === 'event') event.name = value;
      else if (field === 'id') event.id = value;
    }
  }
}
