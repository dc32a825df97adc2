import { hostname } from 'node:os';
import { type QosProfileName, qosProfile } from '@svc/qos';
import type { Logger } from '@svc/runtime';
import {
  answerWebRtc,
  CertificateRotation,
  quicBinding,
  type RelayAttachRequest,
  type RelayAttachResult,
  type Session,
  type WebRtcAnswer,
  type WebRtcIceServer,
  WebTransportServer,
} from '@svc/transport';
import type { SessionBackend } from '@svc/wire';
import { certificatePath, loadCertificate, saveCertificate } from './certificate-store.js';
import { ChannelQos } from './channel-qos.js';
import { CommandChannel } from './command-channel.js';
import type {
  CommandChannelConfig,
  DaemonConfig,
  SensorChannelConfig,
  VideoChannelConfig,
} from './config.js';
import { PilotSession } from './pilot-session/session.js';
import { PublisherControl } from './publisher-control.js';
import { ChannelRecovery } from './recovery.js';
import { SensorChannel } from './sensor-channel.js';
import { type AuthorizeSession, SessionRegistry } from './session-registry.js';
import { VideoChannel } from './video-channel.js';

/** Options of {@link serve}. */
export interface ServeOptions {
  readonly config: DaemonConfig;
  readonly logger: Logger;
  /** Address to bind; default all addresses (`::` with `ipv6 = true`, else `0.0.0.0`). */
  readonly host?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Checks each pilot's `hello`: the pilot session token verifier. */
  readonly authorize: AuthorizeSession;
}

/** A running daemon. */
export interface RunningDaemon {
  /** The QUIC port; `undefined` when this install has no QUIC binding and serves WebRTC only. */
  readonly port: number | undefined;
  /** The transports pilots can reach this daemon on, as announced to svc-cloud. */
  readonly backends: readonly SessionBackend[];
  /** SHA-256 of the current certificate (and the previous one during a rotation), hex. */
  certificateHashes(): string[];
  /** The open sessions: the signalling client revokes through it and follows its events. */
  readonly sessions: SessionRegistry;
  /** Attaches the QUIC port to a relayed session's relay port (svc-cloud's `relay-open`). */
  attachRelay(request: RelayAttachRequest): Promise<RelayAttachResult>;
  /**
   * Answers a pilot's WebRTC offer (svc-cloud's `rtc-session`, `docs/protocol/webrtc.md`); the
   * session it opens is served like one on WebTransport. Rejects with a `TransportError` when the
   * offer cannot be used.
   */
  answerRtc(request: RtcRequest): Promise<WebRtcAnswer>;
  stop(): Promise<void>;
}

/** What {@link RunningDaemon.answerRtc} needs. */
export interface RtcRequest {
  readonly sdp: string;
  readonly iceServers: readonly WebRtcIceServer[];
  /** Each local candidate, for the pilot. */
  readonly onCandidate: (candidate: string, mid: string) => void;
}

/** How long a session the robot ends may stay open for the pilot to read why (it closes it itself then). */
const CLOSE_GRACE_MS = 2_000;
/** How long stopping waits for WebRTC sessions' close messages to leave, ms. */
const RTC_CLOSE_LINGER_MS = 150;
/** The rate controllers' period, ms. */
const QOS_PERIOD_MS = 1_000;

/**
 * Runs the direct path: a certificate that rotates before Chromium's 14-day limit, the
 * WebTransport server on `quic_port`, every video channel's ingest, and a {@link PilotSession}
 * per connected pilot.
 */
export async function serve(options: ServeOptions): Promise<RunningDaemon> {
  const { config, logger } = options;
  let profile = qosProfile(config.agent.qos_profile);
  for (const warning of config.warnings) logger.warn({}, warning);
  const certificateFile = certificatePath(config.agent.credential_path);
  const saved = await loadCertificate(certificateFile, logger);
  const certificates = await CertificateRotation.start({
    commonName: config.agent.robot_id,
    altNames: [hostname()],
    ...(saved !== undefined && { initial: saved }),
    onRotate: (current) => {
      logger.info({ hashes: certificates.hashes().map(hex) }, 'certificate rotated');
      saveCertificate(certificateFile, current).catch((err: unknown) =>
        logger.warn(
          { err: String(err) },
          'cannot save the certificate; pilots will need the new hash after a restart',
        ),
      );
    },
    onError: (err) => logger.error({ err: String(err) }, 'certificate rotation failed; retrying'),
  });
  if (certificates.current() !== saved) {
    await saveCertificate(certificateFile, certificates.current()).catch((err: unknown) =>
      logger.warn(
        { err: String(err) },
        'cannot save the certificate; pilots will need the new hash after a restart',
      ),
    );
  }
  const channels = config.channels
    .filter((c): c is VideoChannelConfig => c.kind === 'video')
    .map((c) => new VideoChannel(c, profile, logger));
  const registry = new SessionRegistry({
    maxSessions: config.agent.max_sessions,
    driverGraceMs: config.agent.driver_grace_ms,
    logger,
  });
  const { authorize } = options;
  const opened: { close(): Promise<void> }[] = [];
  /** Recovery requests per video channel id, when there is a publisher to ask. */
  const recovery = new Map<number, ChannelRecovery>();
  const sensors: SensorChannel[] = [];
  const commands: CommandChannel[] = [];
  let publisherControl: PublisherControl | undefined;
  /** Each video channel's rate controller, by channel id. */
  const qos = new Map<number, ChannelQos>();
  const pilots = new Set<PilotSession>();
  /** WebRTC sessions being set up, and those open. */
  const rtcAnswers = new Set<WebRtcAnswer>();
  const rtcSessions = new Set<Session>();
  let stopping = false;
  /** The driver chose another profile: every channel, ladder and session follows. */
  const changeProfile = (name: QosProfileName) => {
    profile = qosProfile(name);
    for (const channelQos of qos.values()) channelQos.setProfile(profile);
    for (const ladder of recovery.values()) ladder.setProfile(profile);
    for (const pilot of pilots) pilot.profileChanged(profile);
  };
  try {
    for (const c of config.channels.filter((c): c is SensorChannelConfig => c.kind === 'sensor')) {
      const sensor = await SensorChannel.open(c, logger);
      sensors.push(sensor);
      opened.push(sensor);
    }
    for (const c of config.channels.filter((c): c is CommandChannelConfig => c.kind === 'command')) {
      const command = await CommandChannel.open(c, logger);
      commands.push(command);
      opened.push(command);
    }
    if (config.publisherControl !== undefined) {
      publisherControl = await PublisherControl.open({ address: config.publisherControl, logger });
      opened.push(publisherControl);
      publisherControl.followSessions(registry);
    }
  } catch (err) {
    await Promise.all(opened.map((o) => o.close()));
    certificates.stop();
    throw err;
  }
  const quic = quicBinding();
  if (!quic.available) {
    logger.warn(
      { reason: quic.reason },
      'no QUIC on this machine: pilots are served on WebRTC only (no WebTransport direct path and no QUIC relay); install a build of @matrixai/quic for this platform to add them',
    );
  }
  const server = quic.available
    ? await WebTransportServer.listen({
        host: options.host ?? (config.agent.ipv6 ? '::' : '0.0.0.0'),
        port: config.agent.quic_port,
        certificates,
        path: '/',
        // Room above max_sessions, so a pilot over the limit hears "robot busy" from the registry
        // on the control stream instead of a bare HTTP 429.
        maxSessions: config.agent.max_sessions + 4,
        onError: (err) => logger.error({ err: String(err) }, 'transport error'),
        onSession: (session) => accept(session),
      })
    : undefined;
  /** A pilot's transport session, on either backend: a {@link PilotSession} serves it. */
  function accept(session: Session): void {
    logger.info({ session: session.id, remote: session.remoteAddress }, 'pilot session opened');
    const pilot: PilotSession = new PilotSession({
      session,
      channels,
      sensors,
      commands,
      registry,
      authorize,
      profile,
      qos,
      logger,
      closeGraceMs: CLOSE_GRACE_MS,
      onRecoveryNeeded: (channelId, reason) => recovery.get(channelId)?.keyframeNeeded(reason),
      onLossReported: (channelId) => recovery.get(channelId)?.lossReported('pilot-loss'),
      onBacklogDrop: (channelId) => recovery.get(channelId)?.lossReported('backlog'),
      onProfileRequest: changeProfile,
      maxCommandAgeMs: config.agent.max_command_age_ms,
      commandTimeoutMs: config.agent.command_timeout_ms,
      onDriverIdle: (sessionId, idleMs) =>
        publisherControl?.send({ type: 'driver-idle', session_id: sessionId, idle_ms: idleMs }),
      onClose: () => pilots.delete(pilot),
      adopt: (move): boolean => {
        for (const other of pilots) {
          if (other !== pilot && other.admitted?.sessionId === move.sessionId)
            return other.moveTo(move.transport, move.grant);
        }
        return false;
      },
    });
    pilots.add(pilot);
  }
  for (const channel of channels) followLayers(channel, logger, publisherControl);
  try {
    for (const channel of channels) await channel.start(options.env ?? process.env);
  } catch (err) {
    await Promise.all([...channels.map((c) => c.stop()), server?.close(), ...opened.map((o) => o.close())]);
    certificates.stop();
    throw err;
  }
  if (publisherControl !== undefined) {
    for (const channel of channels) {
      const control = publisherControl;
      const ladder = new ChannelRecovery({
        channel: channel.config.id,
        profile,
        ladder: config.agent.recovery_ladder,
        send: (message) => control.send(message),
      });
      channel.onKeyframe = () => ladder.recoveryPoint();
      recovery.set(channel.config.id, ladder);
    }
  }
  for (const channel of channels) {
    const control = publisherControl;
    const channelQos = new ChannelQos({
      channel,
      profile,
      logger,
      ...(control !== undefined && { send: (message) => control.send(message) }),
    });
    qos.set(channel.config.id, channelQos);
    channelQos.announce();
  }
  const qosTimer = setInterval(() => {
    const now = performance.now();
    for (const channelQos of qos.values()) {
      try {
        channelQos.tick(now);
      } catch (err) {
        logger.error({ channel: channelQos.channel.config.name, err: String(err) }, 'rate controller failed');
      }
    }
  }, QOS_PERIOD_MS);
  qosTimer.unref();
  return {
    port: server?.port,
    backends: server === undefined ? ['webrtc'] : ['quic', 'webrtc'],
    certificateHashes: () => certificates.hashes().map(hex),
    sessions: registry,
    attachRelay: async (request) =>
      server?.attachRelay(request) ?? {
        ok: false,
        code: 'unresolved',
        message:
          'this daemon has no QUIC port (no QUIC binding on this machine), so it cannot take a QUIC relay',
      },
    async answerRtc(request) {
      const host = options.host;
      const answer = await answerWebRtc({
        offerSdp: request.sdp,
        path: '/',
        iceServers: request.iceServers,
        onCandidate: request.onCandidate,
        onError: (err) => logger.error({ err: String(err) }, 'a WebRTC session callback failed'),
        ...(host !== undefined && host !== '0.0.0.0' && host !== '::' && { bindAddress: host }),
      });
      rtcAnswers.add(answer);
      answer.session.then(
        (session) => {
          rtcAnswers.delete(answer);
          if (stopping) {
            session.close(0, 'robot shutting down');
            return;
          }
          for (const open of rtcSessions) if (open.closed) rtcSessions.delete(open);
          rtcSessions.add(session);
          accept(session);
        },
        (err: unknown) => {
          rtcAnswers.delete(answer);
          logger.warn({ err: String(err) }, 'a WebRTC session did not open');
        },
      );
      return answer;
    },
    async stop() {
      stopping = true;
      for (const answer of rtcAnswers) answer.close();
      for (const session of rtcSessions) if (!session.closed) session.close(0, 'robot shutting down');
      clearInterval(qosTimer);
      for (const ladder of recovery.values()) ladder.close();
      await Promise.all(channels.map((c) => c.stop()));
      await server?.close();
      await Promise.all(opened.map((o) => o.close()));
      certificates.stop();
      // The WebRTC sessions' close messages leave before the process may end.
      if (rtcSessions.size > 0) await new Promise((resolve) => setTimeout(resolve, RTC_CLOSE_LINGER_MS));
    },
  };
}

/**
 * Simulcast: each change of a channel's target layer goes to the publisher as a `layer` datagram
 * (it may force an IDR on that layer, so the switch comes at once), and each switch is logged.
 */
export function followLayers(
  channel: VideoChannel,
  logger: Logger,
  control: PublisherControl | undefined,
): void {
  if (channel.layers.length === 0) return;
  const where = { channel: channel.config.name };
  channel.onLayerRequest = (layer, name, reason) => {
    logger.info({ ...where, layer, name, reason }, 'simulcast layer requested');
    control?.send({ type: 'layer', channel: channel.config.id, layer, name, reason });
  };
  channel.onLayerSwitched = (layer, name) =>
    logger.info({ ...where, layer, name }, 'simulcast layer switched');
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
