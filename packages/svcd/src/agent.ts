import type { Logger } from '@svc/runtime';
import type { SignalChannel } from '@svc/wire';
import { candidateSource } from './candidates.js';
import type { DaemonConfig } from './config.js';
import { enrolmentBaseUrl, enrolOnStart } from './enrolment.js';
import { type RunningDaemon, serve } from './serve.js';
import type { AuthorizeSession } from './session-registry.js';
import { isSessionTokenError, SessionTokenVerifier } from './session-tokens.js';
import { type SessionOpenMessage, SignallingClient } from './signalling/client.js';

/** Options of {@link runAgent}. */
export interface AgentOptions {
  readonly config: DaemonConfig;
  /** The configuration file, named in remedies the daemon logs. */
  readonly configPath?: string;
  readonly logger: Logger;
  /** Address to bind the QUIC port to, and the only candidate announced (default: all). */
  readonly host?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Fetch for enrolment and the JWKS (tests); default `globalThis.fetch`. */
  readonly fetch?: typeof fetch;
}

/** A running daemon with its identity and signalling. */
export interface RunningAgent {
  readonly daemon: RunningDaemon;
  readonly signalling: SignallingClient;
  stop(): Promise<void>;
}

/** How long an offer the cloud announced waits for the pilot's `hello`. */
const OFFER_TTL_MS = 60_000;

/**
 * Runs the robot daemon as deployed: the robot's key (created on first run), enrolment when a
 * token is configured (fatal on a first run, a warning otherwise), the pilot session token
 * verifier (keys from the service's JWKS, cached on disk so sessions keep working while the cloud
 * is unreachable), the direct path with every channel, and the signalling client that announces
 * the robot and reports its sessions.
 *
 * @throws EnrolmentError on a first run whose enrolment failed.
 */
export async function runAgent(options: AgentOptions): Promise<RunningAgent> {
  const { config, logger } = options;
  const agent = config.agent;
  const enrolment = await enrolOnStart({
    config,
    logger,
    ...(options.fetch !== undefined && { fetch: options.fetch }),
  });
  const baseUrl = enrolmentBaseUrl(agent.signal_url);
  const verifier = new SessionTokenVerifier({
    baseUrl,
    robotId: agent.robot_id,
    cacheFile: `${agent.credential_path}.session-jwks.json`,
    logger,
    ...(options.fetch !== undefined && { fetch: options.fetch }),
  });
  await verifier.start();

  // Offers the cloud announced (`session-open`): the role it gave, matched by session id and jti.
  const offers = new Map<string, { message: SessionOpenMessage; until: number }>();
  const authorize: AuthorizeSession = async (hello) => {
    let claims: Awaited<ReturnType<SessionTokenVerifier['verify']>>;
    try {
      claims = await verifier.verify(hello.token);
    } catch (err) {
      if (!isSessionTokenError(err)) throw err;
      return {
        ok: false,
        code: 'token-refused',
        reason: `pilot session token refused (${err.code}): ${err.message}`,
      };
    }
    const offer = hello.sessionId === undefined ? undefined : offers.get(hello.sessionId);
    const matches = offer !== undefined && offer.message.jti === claims.jti && offer.until > Date.now();
    if (matches) offers.delete(hello.sessionId!);
    return {
      ok: true,
      sub: claims.sub,
      scope: claims.scope,
      jti: claims.jti,
      exp: claims.exp,
      ...(matches && { sessionId: offer.message.session_id, role: offer.message.role }),
    };
  };

  let daemon: RunningDaemon;
  try {
    daemon = await serve({
      config,
      logger,
      authorize,
      ...(options.host !== undefined && { host: options.host }),
      ...(options.env !== undefined && { env: options.env }),
    });
  } catch (err) {
    verifier.stop();
    throw err;
  }

  const candidates = candidateSource({
    port: daemon.port,
    ipv6: agent.ipv6,
    portMapping: agent.port_mapping,
    logger,
    ...(options.host !== undefined && { addresses: [options.host] }),
  });
  const channels: SignalChannel[] = config.channels.map((c) => ({
    id: c.id,
    name: c.name,
    kind: c.kind,
    codec: c.codec,
  }));
  const signalling = new SignallingClient({
    url: agent.signal_url,
    robotId: agent.robot_id,
    credential: enrolment.credential,
    logger,
    ...(options.configPath !== undefined && { configPath: options.configPath }),
    announce: () => ({
      candidates: candidates(),
      cert_hashes: daemon.certificateHashes(),
      channels,
      max_sessions: agent.max_sessions,
      relay: agent.relay,
      driver_grace_ms: agent.driver_grace_ms,
    }),
    onSessionOpen: (message) => {
      const now = Date.now();
      for (const [id, offer] of offers) if (offer.until <= now) offers.delete(id);
      offers.set(message.session_id, { message, until: now + OFFER_TTL_MS });
    },
    onSessionRevoked: (message) => {
      daemon.sessions.revoke(message.session_id, message.reason);
      if (message.jti !== undefined) daemon.sessions.revokeJti(message.jti, undefined, message.reason);
    },
    onSessionRole: (message) => {
      const reason =
        message.role === 'driver'
          ? 'svc-cloud gave this session the driver slot'
          : 'svc-cloud moved the driver slot';
      if (!daemon.sessions.setRole(message.session_id, message.role, reason)) {
        logger.warn(
          { session_id: message.session_id, role: message.role },
          'svc-cloud moved the driver slot to a session this robot cannot give it to (not open, or an observe token); ignored',
        );
      }
    },
  });
  const unsubscribe = [
    daemon.sessions.on('started', ({ session }) =>
      signalling.sessionStarted({ session_id: session.sessionId, role: session.role, sub: session.sub }),
    ),
    daemon.sessions.on('ended', ({ session }) => signalling.sessionEnded(session.sessionId)),
  ];
  signalling.start();
  logger.info(
    { robotId: agent.robot_id, quicPort: daemon.port, enrolment: enrolment.status },
    'svcd running',
  );
  return {
    daemon,
    signalling,
    async stop() {
      for (const off of unsubscribe) off();
      await signalling.stop();
      await daemon.stop();
      verifier.stop();
    },
  };
}
