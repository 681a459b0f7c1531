/**
 * NATS connection options from the settings: servers, authentication (creds file, nkey seed file,
 * token or user/password) and TLS. Secrets are read from files at connect time and never logged.
 */
import fs from 'node:fs/promises';
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  type NatsConnection,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';
import { explainConnectError } from './nats-connect-error.js';
import { unreadableFiles } from './nats-credentials.js';
import { ProtocolSettingsError, type ProtocolSettings } from './settings.js';
import { definedFields } from '../defined-fields.js';

type ConnectionSettings = Pick<
  ProtocolSettings,
  | 'natsUrl'
  | 'natsName'
  | 'natsCredsFile'
  | 'natsNkeySeedFile'
  | 'natsToken'
  | 'natsUser'
  | 'natsPassword'
  | 'natsTlsCaFile'
  | 'natsTlsCertFile'
  | 'natsTlsKeyFile'
  | 'natsInboxPrefix'
>;

/** A PING this often (a few bytes each way)... */
const PING_INTERVAL_MS = 5000;
/** ...and this many unanswered make the server silent: the connection moves on. */
const SILENT_SERVER_PINGS = 2;
const CONNECT_TIMEOUT_MS = 8000;

export async function connectionOptions(s: ConnectionSettings): Promise<NodeConnectionOptions> {
  const options: NodeConnectionOptions = {
    servers: s.natsUrl
      .split(',')
      .map((u) => u.trim())
      .filter(Boolean),
    name: s.natsName,
    // A daemon outlives server restarts and upgrades: never give up reconnecting.
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    // A server cut off by a partition drops packets without closing the connection: only the
    // client's PINGs tell. The client's default (every 2 minutes) kept workers on an isolated node,
    // idle, for the whole partition (npm run chaos:partitions); now a silent server is left after
    // SILENT_SERVER_PINGS unanswered PINGs, within about 15 s, for another server of the list.
    pingInterval: PING_INTERVAL_MS,
    maxPingOut: SILENT_SERVER_PINGS,
    // And a server that accepts no connection in this time is passed over for the next (the
    // client's default waits 20 s on each, on an isolated node's unanswered SYNs).
    timeout: CONNECT_TIMEOUT_MS,
    inboxPrefix: s.natsInboxPrefix,
  };
  if (s.natsCredsFile !== undefined) options.authenticator = credsAuthenticator(await fs.readFile(s.natsCredsFile));
  if (s.natsNkeySeedFile !== undefined) {
    const seed = (await fs.readFile(s.natsNkeySeedFile, 'utf8')).trim();
    options.authenticator = nkeyAuthenticator(new TextEncoder().encode(seed));
  }
  if (s.natsToken !== undefined) options.token = s.natsToken;
  if (s.natsUser !== undefined) {
    options.user = s.natsUser;
    if (s.natsPassword !== undefined) options.pass = s.natsPassword;
  }
  if (s.natsTlsCaFile !== undefined || s.natsTlsCertFile !== undefined || s.natsTlsKeyFile !== undefined) {
    options.tls = definedFields({ caFile: s.natsTlsCaFile, certFile: s.natsTlsCertFile, keyFile: s.natsTlsKeyFile });
  }
  return options;
}

export async function connectNats(s: ConnectionSettings): Promise<NatsConnection> {
  const unreadable = unreadableFiles(s);
  if (unreadable.length > 0) throw new ProtocolSettingsError(unreadable.join('\n'));
  const options = await connectionOptions(s);
  return connect(options).catch((err: unknown) => {
    throw explainConnectError(err, s.natsUrl, s);
  });
}
