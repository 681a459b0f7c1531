/**
 * The active span's W3C Trace Context (traceparent, tracestate) as NATS message headers
 * (docs/operations.md, "Tracing"): what a job, a quote or cancel request and an event carry so
 * that the receiver's spans descend from the sender's. Nothing while tracing is off.
 */
import { headers, type MsgHdrs } from '@nats-io/transport-node';
import { traceHeaders } from '../telemetry/index.js';

/** `into` with the trace's headers added, or new headers holding them; undefined when there is no trace to send (and no `into`). */
export function withTraceHeaders(into: MsgHdrs): MsgHdrs;
export function withTraceHeaders(): MsgHdrs | undefined;
export function withTraceHeaders(into?: MsgHdrs): MsgHdrs | undefined {
  const trace = Object.entries(traceHeaders());
  if (trace.length === 0) return into;
  const h = into ?? headers();
  for (const [name, value] of trace) h.set(name, value);
  return h;
}
