import { hostname } from 'node:os';
import type { Logger } from '@svc/media';
import { qosProfile } from '@svc/qos';
import { CertificateRotation, WebTransportServer } from '@svc/transport';
import { certificatePath, loadCertificate, saveCertificate } from './certificate-store.js';
import type { DaemonConfig, VideoChannelConfig } from './config.js';
import { PilotSession } from './pilot-session.js';
import { VideoChannel } from './video-channel.js';

/** Options of {@link serve}. */
export interface ServeOptions {
  readonly config: DaemonConfig;
  readonly logger: Logger;
  /** Development mode: pilots connect straight to the printed URL and any token is accepted. */
  readonly dev: boolean;
  /** Address to bind; default all addresses (`::` with `ipv6 = true`, else `0.0.0.0`). */
  readonly host?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** A running daemon. */
export interface RunningDaemon {
  readonly port: number;
  /** SHA-256 of the current certificate (and the previous one during a rotation), hex. */
  certificateHashes(): string[];
  stop(): Promise<void>;
}

/**
 * Runs the direct path: a certificate that rotates before Chromium's 14-day limit, the
 * WebTransport server on `quic_port`, every video channel's ingest, and a {@link PilotSession}
 * per connected pilot.
 */
export async function serve(options: ServeOptions): Promise<RunningDaemon> {
  const { config, logger } = options;
  const profile = qosProfile(config.agent.qos_profile);
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
  const server = await WebTransportServer.listen({
    host: options.host ?? (config.agent.ipv6 ? '::' : '0.0.0.0'),
    port: config.agent.quic_port,
    certificates,
    path: '/',
    maxSessions: config.agent.max_sessions,
    onError: (err) => logger.error({ err: String(err) }, 'transport error'),
    onSession: (session) => {
      logger.info({ session: session.id, remote: session.remoteAddress }, 'pilot session opened');
      new PilotSession({ session, channels, profile, logger, acceptAnyToken: options.dev });
    },
  });
  try {
    for (const channel of channels) await channel.start(options.env ?? process.env);
  } catch (err) {
    await Promise.all([...channels.map((c) => c.stop()), server.close()]);
    certificates.stop();
    throw err;
  }
  return {
    port: server.port,
    certificateHashes: () => certificates.hashes().map(hex),
    async stop() {
      await Promise.all(channels.map((c) => c.stop()));
      await server.close();
      certificates.stop();
    },
  };
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
