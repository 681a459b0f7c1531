/**
 * Cross-checks of the NATS credential and TLS settings, so a half-configured connection is refused
 * by `config` and at start, naming the variables, instead of failing later as the server's
 * "Authorization Violation". `credentialProblems` is pure (the settings schema runs it);
 * `unreadableFiles` looks at the files, for `config` and just before connecting.
 */
import { accessSync, constants } from 'node:fs';

export interface NatsCredentialSettings {
  natsCredsFile?: string | undefined;
  natsNkeySeedFile?: string | undefined;
  natsToken?: string | undefined;
  natsUser?: string | undefined;
  natsPassword?: string | undefined;
  natsTlsCaFile?: string | undefined;
  natsTlsCertFile?: string | undefined;
  natsTlsKeyFile?: string | undefined;
}

export interface CredentialProblem {
  /** The setting the message is about (its variable is named in the message too). */
  key: keyof NatsCredentialSettings;
  message: string;
}

const FILE_SETTINGS = [
  ['natsCredsFile', 'NATS_CREDS_FILE'],
  ['natsNkeySeedFile', 'NATS_NKEY_SEED_FILE'],
  ['natsTlsCaFile', 'NATS_TLS_CA_FILE'],
  ['natsTlsCertFile', 'NATS_TLS_CERT_FILE'],
  ['natsTlsKeyFile', 'NATS_TLS_KEY_FILE'],
] as const;

/** Every problem of the credential settings; empty when the connection can be attempted. */
export function credentialProblems(s: NatsCredentialSettings): CredentialProblem[] {
  const problems: CredentialProblem[] = [];
  const methods = [
    s.natsCredsFile === undefined ? null : 'NATS_CREDS_FILE',
    s.natsNkeySeedFile === undefined ? null : 'NATS_NKEY_SEED_FILE',
    s.natsToken === undefined ? null : 'NATS_TOKEN',
    s.natsUser === undefined ? null : 'NATS_USER',
  ].filter((m): m is string => m !== null);
  if (methods.length > 1) {
    problems.push({
      key: 'natsUser',
      message: `Expected at most one way to authenticate but received ${methods.join(' and ')}`,
    });
  }
  if (s.natsUser !== undefined && s.natsPassword === undefined) {
    problems.push({ key: 'natsPassword', message: 'Expected NATS_PASSWORD with NATS_USER but received none' });
  }
  if (s.natsPassword !== undefined && s.natsUser === undefined) {
    problems.push({ key: 'natsUser', message: 'Expected NATS_USER with NATS_PASSWORD but received none' });
  }
  if ((s.natsTlsCertFile === undefined) !== (s.natsTlsKeyFile === undefined)) {
    const missing = s.natsTlsCertFile === undefined ? 'natsTlsCertFile' : 'natsTlsKeyFile';
    problems.push({
      key: missing,
      message: 'Expected NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE together (mutual TLS) but received only one',
    });
  }
  return problems;
}

/** `Invalid setting NATS_…: Expected a readable file …` for each named file this process cannot read. */
export function unreadableFiles(s: NatsCredentialSettings, readable: (file: string) => boolean = isReadable): string[] {
  const problems: string[] = [];
  for (const [key, env] of FILE_SETTINGS) {
    const file = s[key];
    if (file !== undefined && !readable(file))
      problems.push(`Invalid setting ${env}: Expected a readable file but received ${JSON.stringify(file)}`);
  }
  return problems;
}

function isReadable(file: string): boolean {
  try {
    accessSync(file, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}
