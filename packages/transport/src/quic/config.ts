import type { CertificateMaterial } from '../cert/self-signed.js';
import { loadQuiche, type NativeConfig } from './binding.js';

/**
 * Congestion controllers this quiche build accepts (`setCcAlgorithmName`). quiche 0.18 as built
 * by `@matrixai/quic` 2.0.9 refuses `bbr2`.
 */
export const CONGESTION_CONTROLLERS = ['cubic', 'reno', 'bbr'] as const;

/** One of {@link CONGESTION_CONTROLLERS}. */
export type CongestionControl = (typeof CONGESTION_CONTROLLERS)[number];

/** Transport parameters and queue sizes of the QUIC server; every field has a default. */
export interface QuicTransportOptions {
  /** ALPN protocols offered, in order of preference; defaults to `['h3']`. */
  alpn?: readonly string[];
  /** Idle timeout in milliseconds (both sides' minimum applies); defaults to 30 000. */
  maxIdleTimeoutMs?: number;
  /** Largest UDP payload we send; defaults to 1350 (quiche's default, safe on most paths). */
  maxSendUdpPayload?: number;
  /**
   * Largest UDP payload we send to a peer on a loopback address, where the MTU is known (64 KiB)
   * and no tunnel can shrink it; defaults to 1472, what Chromium accepts (its
   * max_udp_payload_size). quiche never sends more than the peer's limit either way.
   */
  loopbackMaxSendUdpPayload?: number;
  /** Largest UDP payload we accept; defaults to 1500. */
  maxRecvUdpPayload?: number;
  /** Connection-wide flow-control window offered to the peer, bytes; defaults to 10 MB. */
  initialMaxData?: number;
  /** Per-stream flow-control window offered to the peer (bidirectional and unidirectional), bytes; defaults to 1 MB. */
  initialMaxStreamData?: number;
  /** Bidirectional streams the peer may open; defaults to 100. */
  maxStreamsBidi?: number;
  /** Unidirectional streams the peer may open; defaults to 100. */
  maxStreamsUni?: number;
  /** Received datagrams quiche holds until read; defaults to 1024. */
  datagramRecvQueue?: number;
  /** Datagrams quiche holds until the congestion window lets them out; defaults to 4096 (a few key frames of video). */
  datagramSendQueue?: number;
  /** Congestion controller; defaults to `bbr` (ADR 0013: random loss on cellular links must not collapse the window). */
  congestionControl?: CongestionControl;
  /** Lets quiche pace its sends (the binding does not expose the send time, so packets still leave at once); defaults to true. */
  pacing?: boolean;
  /** Adds GREASE values to the handshake, as browsers do; defaults to true. */
  grease?: boolean;
}

/** {@link QuicTransportOptions} with every default applied. */
export type ResolvedTransportOptions = Readonly<Required<QuicTransportOptions>>;

/** The defaults of {@link QuicTransportOptions}, in one place. */
export const DEFAULT_TRANSPORT_OPTIONS: ResolvedTransportOptions = Object.freeze({
  alpn: Object.freeze(['h3']),
  maxIdleTimeoutMs: 30_000,
  maxSendUdpPayload: 1350,
  loopbackMaxSendUdpPayload: 1472,
  maxRecvUdpPayload: 1500,
  initialMaxData: 10_000_000,
  initialMaxStreamData: 1_000_000,
  maxStreamsBidi: 100,
  maxStreamsUni: 100,
  datagramRecvQueue: 1024,
  datagramSendQueue: 4096,
  congestionControl: 'bbr',
  pacing: true,
  grease: true,
});

/** Limits for the integer options: name, smallest and largest accepted value. */
const INTEGER_LIMITS: ReadonlyArray<readonly [keyof QuicTransportOptions, number, number]> = [
  ['maxIdleTimeoutMs', 0, 600_000],
  // RFC 9000 §18.2: max_udp_payload_size below 1200 is invalid.
  ['maxSendUdpPayload', 1200, 65_527],
  ['loopbackMaxSendUdpPayload', 1200, 65_527],
  ['maxRecvUdpPayload', 1200, 65_527],
  ['initialMaxData', 0, 2 ** 52],
  ['initialMaxStreamData', 0, 2 ** 52],
  ['maxStreamsBidi', 0, 2 ** 52],
  ['maxStreamsUni', 0, 2 ** 52],
  ['datagramRecvQueue', 1, 1_000_000],
  ['datagramSendQueue', 1, 1_000_000],
];

/**
 * Applies the defaults and checks every value; the result is frozen.
 *
 * @throws TypeError naming the option, the value and what was expected.
 */
export function resolveTransportOptions(options: QuicTransportOptions = {}): ResolvedTransportOptions {
  const resolved = { ...DEFAULT_TRANSPORT_OPTIONS };
  // Only the transport keys: callers may pass a larger object (the endpoint's options).
  for (const key of Object.keys(DEFAULT_TRANSPORT_OPTIONS) as (keyof QuicTransportOptions)[]) {
    const value = options[key];
    if (value !== undefined) Object.assign(resolved, { [key]: value });
  }
  for (const [key, min, max] of INTEGER_LIMITS) {
    const value = resolved[key];
    if (!(Number.isInteger(value) && (value as number) >= min && (value as number) <= max)) {
      throw new TypeError(
        `QUIC option ${key} must be an integer from ${min} to ${max}, got ${String(value)}`,
      );
    }
  }
  const { alpn, congestionControl, pacing, grease } = resolved;
  if (
    !Array.isArray(alpn) ||
    alpn.length === 0 ||
    !alpn.every((p) => typeof p === 'string' && p.length > 0 && p.length < 256)
  ) {
    throw new TypeError(`QUIC option alpn must be a non-empty list of protocol names, got ${String(alpn)}`);
  }
  if (!CONGESTION_CONTROLLERS.includes(congestionControl)) {
    throw new TypeError(
      `QUIC option congestionControl must be one of ${CONGESTION_CONTROLLERS.join(', ')}, got ${String(congestionControl)}`,
    );
  }
  if (typeof pacing !== 'boolean')
    throw new TypeError(`QUIC option pacing must be a boolean, got ${String(pacing)}`);
  if (typeof grease !== 'boolean')
    throw new TypeError(`QUIC option grease must be a boolean, got ${String(grease)}`);
  return Object.freeze({ ...resolved, alpn: Object.freeze([...alpn]) });
}

const utf8 = new TextEncoder();

/**
 * Builds a server-side quiche `Config` presenting `material`. One `Config` serves many
 * connections; it holds the TLS context with the certificate, so a new certificate needs a new
 * `Config` while connections made with the old one keep theirs.
 *
 * @throws Error from the binding when the certificate or key does not load.
 */
export function buildServerConfig(
  material: CertificateMaterial,
  options: ResolvedTransportOptions,
): NativeConfig {
  // withBoringSslCtx(verifyPeer, verifyAllowFail, ca, keys, certChains, sigalgs): PEM bytes in
  // memory; the binding uses only the first key and chain of the lists.
  const config = loadQuiche().Config.withBoringSslCtx(
    false,
    false,
    null,
    [utf8.encode(material.keyPem)],
    [utf8.encode(material.certPem)],
    null,
  );
  config.verifyPeer(false);
  config.grease(options.grease);
  config.setApplicationProtos([...options.alpn]);
  config.setMaxIdleTimeout(options.maxIdleTimeoutMs);
  config.setMaxRecvUdpPayloadSize(options.maxRecvUdpPayload);
  config.setMaxSendUdpPayloadSize(options.maxSendUdpPayload);
  config.setInitialMaxData(options.initialMaxData);
  config.setInitialMaxStreamDataBidiLocal(options.initialMaxStreamData);
  config.setInitialMaxStreamDataBidiRemote(options.initialMaxStreamData);
  config.setInitialMaxStreamDataUni(options.initialMaxStreamData);
  config.setInitialMaxStreamsBidi(options.maxStreamsBidi);
  config.setInitialMaxStreamsUni(options.maxStreamsUni);
  config.enableDgram(true, options.datagramRecvQueue, options.datagramSendQueue);
  config.setCcAlgorithmName(options.congestionControl);
  config.enablePacing(options.pacing);
  // The server owns one socket and issues no spare connection ids: peers must not migrate.
  config.setDisableActiveMigration(true);
  return config;
}
