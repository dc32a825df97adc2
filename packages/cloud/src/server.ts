import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { type Logger, redactUrl } from '@svc/runtime';
import { createLogger } from '@svc/runtime/node';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { type CloudConfig, loadCloudConfig } from './config.js';
import { type Database, openDatabase } from './db/index.js';
import { prepareDemo } from './demo.js';
import { type EmbeddedOidcProvider, OidcVerifier, openDevelopmentProvider } from './identity/index.js';
import { invitationProviderFor, logMailer } from './invitations/index.js';
import { SessionKeyStore } from './sessions/index.js';
import { SignallingServer } from './signalling/index.js';

/** A running svc-cloud. */
export interface RunningCloud {
  readonly config: CloudConfig;
  readonly app: FastifyInstance;
  readonly database: Database;
  /** The embedded development provider, when no issuer is configured. */
  readonly devProvider: EmbeddedOidcProvider | undefined;
  /** The address it listens on, e.g. `http://127.0.0.1:8080`. */
  readonly address: string;
  /** The process's logger (the HTTP app, signalling, session keys and the mailer log through it). */
  readonly log: Logger;
  close(): Promise<void>;
}

/**
 * Connections the kernel may hold for `accept` (capped by `net.core.somaxconn`). Node's default of
 * 511 overflows when a fleet reconnects at once after a restart: dropped SYNs are retried by the
 * robots' kernels after 1, 3, 7 s, which stretches a reconnect storm many times over.
 */
const LISTEN_BACKLOG = 4096;

/** Folder of the embedded development provider's keys and sessions, inside `SVC_DATA_DIR`. */
export const DEV_PROVIDER_STATE_DIR = 'dev-oidc';

/** Test users of the embedded development provider's login page. */
export const DEV_USERS = [
  {
    sub: 'dev-olivia',
    name: 'Olivia (owner)',
    email: 'olivia@example.test',
    emailVerified: true,
    groups: ['owners'],
  },
  {
    sub: 'dev-alice',
    name: 'Alice (admin)',
    email: 'alice@example.test',
    emailVerified: true,
    groups: ['admins'],
  },
  {
    sub: 'dev-bob',
    name: 'Bob (operator)',
    email: 'bob@example.test',
    emailVerified: true,
    groups: ['operators'],
  },
  {
    sub: 'dev-vera',
    name: 'Vera (viewer)',
    email: 'vera@example.test',
    emailVerified: true,
    groups: ['viewers'],
  },
] as const;

/**
 * Starts svc-cloud from an environment: validates the configuration (failing with every bad
 * variable named), opens the database (PostgreSQL with `DATABASE_URL`, else the embedded one),
 * starts the embedded development provider when no issuer is configured, and listens. Every log
 * line goes through one `@svc/runtime` logger on stderr (JSON unless stderr is a terminal).
 *
 * @throws {CloudConfigError} when the environment cannot configure a service.
 * @throws {DatabaseError} when the database cannot be opened.
 * @throws {IdentityError} when the development provider's keys or state in `<SVC_DATA_DIR>/dev-oidc`
 *   are damaged (`dev-state-corrupt`) or cannot be written (`dev-state-unavailable`).
 */
export async function startCloud(env: Readonly<Record<string, string | undefined>>): Promise<RunningCloud> {
  const config = loadCloudConfig(env);
  const log = createLogger({ name: 'svc-cloud', level: config.logLevel });
  const database = await openDatabase({
    ...(config.databaseUrl === undefined ? { dataDir: config.dataDir } : { url: config.databaseUrl }),
    logger: log,
  });
  let devProvider: EmbeddedOidcProvider | undefined;
  if (config.identity.kind === 'development') {
    try {
      // Keys and sessions in the data folder: a restart keeps people signed in.
      devProvider = await openDevelopmentProvider({
        stateDir: join(config.dataDir, DEV_PROVIDER_STATE_DIR),
        issuer: config.identity.issuer,
        audience: config.identity.audience,
        clientId: config.identity.clientId,
        redirectUris: [`${config.consoleUrl}/`, config.consoleUrl, `${config.publicUrl}/`],
        users: DEV_USERS.map((u) => ({ ...u, groups: [...u.groups] })),
        allowTypedNames: true,
        logger: log,
      });
    } catch (err) {
      await database.close();
      throw err;
    }
  }
  const verifier = new OidcVerifier({
    issuer: config.identity.issuer,
    audience: config.identity.audience,
    clientId: config.identity.clientId,
    ...(config.identity.kind === 'external' && config.identity.jwksUri !== undefined
      ? { jwksUri: config.identity.jwksUri }
      : {}),
    ...(config.identity.kind === 'external' && config.identity.userinfoUri !== undefined
      ? { userinfoUri: config.identity.userinfoUri }
      : {}),
  });
  const sessionKeys = new SessionKeyStore({
    db: database.db,
    issuer: config.publicUrl,
    rotationHours: config.sessionKeyRotationHours,
    log,
  });
  const signalling = new SignallingServer({
    db: database.db,
    verifySessionToken: (token) => sessionKeys.verify(token),
    devOpenEnrolment: config.devOpenEnrolment,
    logger: log,
    ice: config.ice,
    ...(config.relay === undefined
      ? {}
      : { relay: { ...config.relay, bindHost: relayBindHost(config.relay) } }),
  });
  const app = await buildApp({
    config,
    database,
    verifier,
    sessionKeys,
    signalling,
    // With the development provider, invitation links carry its own one-time sign-in tokens.
    invitationProvider: invitationProviderFor(config.invitationProvider, devProvider),
    mail: logMailer(log),
    ...(devProvider === undefined ? {} : { devProvider }),
    logger: log,
  });
  signalling.attach(app.server);
  // Before the HTTP server closes: every signalling connection is told to reconnect elsewhere (1001).
  app.addHook('preClose', () => signalling.close());
  log.info(
    {
      database:
        config.databaseUrl === undefined ? `embedded (${config.dataDir})` : redactUrl(config.databaseUrl),
      issuer: config.identity.issuer,
      provisioning: config.provisioning,
    },
    'svc-cloud starting',
  );
  if (devProvider !== undefined) {
    log.warn(
      { issuer: devProvider.issuer },
      'no SVC_OIDC_ISSUER: serving the embedded DEVELOPMENT identity provider (anyone can sign in as anyone); set SVC_OIDC_ISSUER for real use',
    );
  }
  if (config.devAllowAnonymous) {
    log.warn(
      'SVC_DEV_ALLOW_ANONYMOUS=1: NO ACCOUNT NEEDED, robot listing and presence are unscoped. Development only.',
    );
  }
  if (config.devOpenEnrolment) {
    log.warn('SVC_DEV_OPEN_ENROLMENT=1: unknown robots are trusted on first connection. Development only.');
  }
  let address: string;
  try {
    await sessionKeys.start();
    // npm start's demonstration robot: its org, and an enrolment token until it enrols (src/demo.ts).
    if (config.demo) await prepareDemo({ app, config, db: database.db, log, devUsers: DEV_USERS });
    address = await app.listen({ host: config.host, port: config.port, backlog: LISTEN_BACKLOG });
  } catch (err) {
    await app.close();
    await devProvider?.close();
    await sessionKeys.close();
    await database.close();
    throw err;
  }
  return {
    config,
    app,
    database,
    devProvider,
    address,
    log,
    async close() {
      await app.close();
      await devProvider?.close();
      await sessionKeys.close();
      await database.close();
    },
  };
}

/**
 * The address the relay's ports bind. A UDP socket on a wildcard address answers from whichever
 * address the route out picks, not the one it was reached at: on a host with several addresses a
 * robot behind NAT would see answers from another address and its NAT would drop them. So when
 * the relay's public host is one of this host's own addresses and the bind is a wildcard, the
 * ports bind that address.
 */
export function relayBindHost(relay: { readonly publicHost: string; readonly bindHost: string }): string {
  if (relay.bindHost !== '0.0.0.0' && relay.bindHost !== '::') return relay.bindHost;
  const own = Object.values(networkInterfaces())
    .flat()
    .some((entry) => entry?.address === relay.publicHost);
  return own ? relay.publicHost : relay.bindHost;
}
