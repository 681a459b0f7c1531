/**
 * What the gateway refuses because a part of the service lied (a worker's forged price or result):
 * one error log line with the stable field `security` naming the kind, and one count in
 * `media_gateway_security_events_total{kind}`, so an operator can alert on either
 * (docs/operations.md, "Security events").
 */
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';

export const SECURITY_EVENT_KINDS = ['forged_quote', 'forged_result'] as const;
export type SecurityEventKind = (typeof SECURITY_EVENT_KINDS)[number];

export type SecurityEventReporter = (
  kind: SecurityEventKind,
  details: Record<string, unknown>,
  message: string,
) => void;

/** `metrics`: the gateway's (metrics.ts, which lists SECURITY_EVENT_KINDS from here); only its counter is read. */
export function securityEvents(
  metrics: { readonly securityEvents: Pick<Counter<'kind'>, 'inc'> },
  logger: Pick<Logger, 'error'>,
): SecurityEventReporter {
  return (kind, details, message) => {
    metrics.securityEvents.inc({ kind });
    logger.error({ security: kind, ...details }, `Security event: ${message}`);
  };
}
