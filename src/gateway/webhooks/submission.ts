/**
 * A submission's webhook: its `webhook_url`, checked as every delivery will be (https to a public
 * address, resolved now), or else the account's default endpoint when it has one. Refused with
 * 400 INVALID_WEBHOOK_URL before anything is quoted or charged.
 */
import type { Resolver } from '../../media/index.js';
import { ApiError } from '../errors.js';
import type { SubmissionExtras } from '../store/records.js';
import type { WebhookStore } from './store.js';
import { destinationProblem, parseWebhookUrl, type TargetPolicy } from './target.js';

export type SubmissionWebhook = Pick<SubmissionExtras, 'webhookUrl' | 'webhookDefault'>;

function invalid(message: string): ApiError {
  return ApiError.of('INVALID_WEBHOOK_URL', message);
}

export async function submissionWebhook(
  body: unknown,
  accountId: string,
  store: Pick<WebhookStore, 'account'>,
  policy: TargetPolicy,
  resolve?: Resolver,
): Promise<SubmissionWebhook> {
  const raw =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)['webhook_url']
      : undefined;
  const account = (await store.account(accountId))?.value ?? null;
  if (raw === undefined || raw === null)
    return account?.defaultUrl !== undefined && account.defaultOffAt === undefined ? { webhookDefault: true } : {};
  const parsed = parseWebhookUrl(raw, policy);
  if ('problem' in parsed) throw invalid(parsed.problem);
  const problem = await destinationProblem(parsed.url, policy, resolve);
  if (problem !== null) throw invalid(`Expected webhook_url to reach a public address but ${problem}`);
  if (account === null)
    throw invalid(
      'Expected an account with a webhook secret to sign webhooks but this account has none; the operator makes one with `media-worker accounts webhook-secret`',
    );
  return { webhookUrl: parsed.url.toString() };
}
