import { isIPv4 } from 'node:net';
import type { Logger } from '@svc/runtime';
import type { SignalChannel } from '@svc/wire';
import { candidateSource } from './candidates.js';
import type { DaemonConfig } from './config.js';
import { enrolmentBaseUrl, enrolOnStart } from './enrolment.js';
import { createGatewayClients } from './port-mapping/clients.js';
import { PortMapper } from './port-mapping/mapper.js';
import { RtcSetups } from './rtc-setups.js';
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
  /** The QUIC port's mapping on the gateway, with `port_mapping = true`. */
  readonly portMapper: PortMapper | undefined;
  stop(): Promise<void>;
}

/** How long an offer the cloud announced waits for the pilot's `hello`. */
const OFFER_TTL_MS = 60_000;

/**
 * Runs the robot daemon as deployed: the robot's key (created on first run), enrolment when a
 * token is configured (fatal on a first run, a warning otherwise), the pilot session token
 * verifier (keys from the service's JWKS, cached on disk so sessions keep working while the cloud
 * is unreachable), the direct path with every channel, the signalling client that announces
 * the robot and reports its sessions, and with `port_mapping` the QUIC port's mapping on the
 * gateway (a change of the mapped address is announced at once).
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

  const quicPort = daemon.port;
  if (agent.port_mapping && quicPort === undefined) {
    logger.warn(
      {},
      'port_mapping = true has nothing to map: this daemon has no QUIC port (no QUIC binding on this machine); WebRTC sessions find their way through NAT with ICE and TURN',
    );
  }
  const portMapper =
    agent.port_mapping && quicPort !== undefined
      ? new PortMapper({
          port: quicPort,
          lifetimeS: agent.port_mapping_lifetime_s,
          clients: createGatewayClients({
            protocols: agent.port_mapping_protocols,
            ...(agent.port_mapping_gateway !== undefined && { gateway: agent.port_mapping_gateway }),
            ...(options.host !== undefined &&
              isIPv4(options.host) &&
              options.host !== '0.0.0.0' && { internalAddress: options.host }),
          }),
          logger,
        })
      : undefined;
  const candidates =
    quicPort === undefined
      ? () => []
      : candidateSource({
          port: quicPort,
          ipv6: agent.ipv6,
          ...(options.host !== undefined && { addresses: [options.host] }),
          ...(portMapper !== undefined && { mapped: () => portMapper.candidate() }),
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
      relay: agent.relay && quicPort !== undefined,
      driver_grace_ms: agent.driver_grace_ms,
      backends: [...daemon.backends],
    }),
    onRtcSession: (message) => rtc.offer(message),
    onRtcCandidate: (message) => rtc.candidate(message),
    onSessionOpen: (message) => {
      const now = Date.now();
      for (const [id, offer] of offers) if (offer.until <= now) offers.delete(id);
      offers.set(message.session_id, { message, until: now + OFFER_TTL_MS });
    },
    onSessionRevoked: (message) => {
      daemon.sessions.revoke(message.session_id, message.reason);
      if (message.jti !== undefined) daemon.sessions.revokeJti(message.jti, undefined, message.reason);
    },
    onRelayOpen: (message) => {
      if (!agent.relay) {
        logger.warn(
          { session_id: message.session_id },
          'svc-cloud offered a relay, but relay = false here; ignored',
        );
        return;
      }
      void daemon
        .attachRelay({ host: message.host, port: message.port, token: message.token })
        .then((result) => {
          const where = { session_id: message.session_id, relay: `${message.host}:${message.port}` };
          if (result.ok)
            logger.info({ ...where, expiresInMs: result.expiresInMs }, 'relay attached for a session');
          else logger.warn({ ...where, code: result.code }, `relay attach failed: ${result.message}`);
        });
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
  const rtc = new RtcSetups({
    answer: (request) => daemon.answerRtc(request),
    send: (message) => signalling.rtc(message),
    logger,
  });
  const unsubscribe = [
    daemon.sessions.on('started', ({ session }) =>
      signalling.sessionStarted({
        session_id: session.sessionId,
        role: session.role,
        sub: session.sub,
        path: session.path,
        backend: session.backend,
      }),
    ),
    daemon.sessions.on('ended', ({ session }) => signalling.sessionEnded(session.sessionId)),
    daemon.sessions.on('path', (session) => signalling.sessionPath(session.sessionId, session.path)),
    ...(portMapper === undefined ? [] : [portMapper.on('changed', () => signalling.reannounce())]),
  ];
  signalling.start();
  portMapper?.start();
  logger.info(
    { robotId: agent.robot_id, quicPort: daemon.port, enrolment: enrolment.status },
    'svcd running',
  );
  return {
    daemon,
    signalling,
    portMapper,
    async stop() {
      for (const off of unsubscribe) off();
      rtc.close();
      await Promise.all([signalling.stop(), portMapper?.stop()]);
      await daemon.stop();
      verifier.stop();
    },
  };
}
