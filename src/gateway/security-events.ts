/**
 * What the gateway refuses because a part of the service lied (a worker's forged price or result):
 * one error log line with the stable field `security` naming the kind, and one count in
 * `media_gateway_security_events_total{kind}`, so an operator can alert on either
 * (docs/operations.md, "Security events").
 */
import type { Logger } from 'pino';
import type { GatewayMetrics } from './metrics.js';

export const SECURITY_EVENT_KINDS = ['forged_quote', 'forged_result'] as const;
export type SecurityEventKind = (typeof SECURITY_EVENT_KINDS)[number];

export type SecurityEventReporter = (kind: SecurityEventKind, details: Record<string, unknown>, message: string) => void;

export function securityEvents(metrics: GatewayMetrics, logger: Pick<Logger, 'error'>): SecurityEventReporter {
  return (kind, details, message) => {
    metrics.securityEvents.inc({ kind });
    logger.error({ security: kind, ...details }, `Security event: ${message}`);
  };
}
