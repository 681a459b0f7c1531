/**
 * The command line's variables. Its settings are the rooms' (src/config.ts assembles them; the
 * logging ones are logging/settings.ts); what it reads itself are a client's variables, not the
 * service's: they are in no table (so not in the settings reference), each with why.
 */
export const VARIABLES_NOT_SETTINGS = {
  MEDIA_WORKER_URL: "`media-worker tasks watch`: the gateway's address when --url is not given (a client's)",
  MEDIA_WORKER_API_KEY: "`media-worker tasks watch`: the account key when --api-key is not given (a client's)",
} as const;
