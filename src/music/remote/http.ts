/** The provider HTTP helpers now live in media/provider-http.ts, shared with lip-sync's provider backend. */
export { backoffDelay, callJson, displayUrl, ProviderError, TransientProviderError, waitUntil, withRetry, type CallOptions, type RetryOptions } from '../../media/index.js';
