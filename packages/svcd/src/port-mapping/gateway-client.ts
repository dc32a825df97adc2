/**
 * The boundary of port mapping: one {@link GatewayClient} per protocol, which asks the gateway
 * for a UDP mapping, renews it and removes it. The production clients wrap
 * `@achingbrain/nat-port-mapper` (`nat-pmp.ts`, `upnp.ts`); the mapper's tests pass fakes.
 */
import { CodedError, codedErrorGuard, redactText } from '@svc/runtime';

/** The protocols `port_mapping_protocols` may name, in the default order of trial. */
export const PORT_MAPPING_PROTOCOLS = ['natpmp', 'upnp'] as const;

/** `natpmp`: NAT-PMP (RFC 6886) to the default gateway; `upnp`: UPnP-IGD v2 found by SSDP. */
export type PortMappingProtocol = (typeof PORT_MAPPING_PROTOCOLS)[number];

/** How a protocol is named in log lines. */
export const PROTOCOL_NAMES: Readonly<Record<PortMappingProtocol, string>> = {
  natpmp: 'NAT-PMP',
  upnp: 'UPnP',
};

/** What the mapper asks of a gateway. */
export interface MapRequest {
  /** The robot's UDP port (the QUIC port). */
  readonly internalPort: number;
  /** Lease asked for, in seconds. */
  readonly lifetimeS: number;
  /** The external port to ask for; the internal port when absent (a renewal asks for the one it has). */
  readonly externalPort?: number;
}

/** A mapping a gateway made. */
export interface MappedPort {
  readonly protocol: PortMappingProtocol;
  /** The gateway's address. */
  readonly gateway: string;
  /** The robot's address the gateway forwards to. */
  readonly internalAddress: string;
  readonly internalPort: number;
  /** The public address pilots send to (IPv4). */
  readonly externalAddress: string;
  readonly externalPort: number;
  /** The lease in seconds as asked of the gateway; renewed at half. */
  readonly lifetimeS: number;
}

/** One protocol's way to the gateway. */
export interface GatewayClient {
  readonly protocol: PortMappingProtocol;
  /**
   * Maps (or renews) the UDP port.
   *
   * @throws PortMappingError when no gateway answers or the gateway refuses; the message says
   *   which, for the log. Rejects with the signal's reason when `signal` aborts.
   */
  map(request: MapRequest, signal: AbortSignal): Promise<MappedPort>;
  /** Removes a mapping this client made. @throws PortMappingError when the gateway does not confirm. */
  unmap(mapping: MappedPort, signal: AbortSignal): Promise<void>;
  /** Releases what the client holds (sockets, a discovered gateway). */
  close(): Promise<void>;
}

/**
 * The code of {@link PortMappingError}: `no-gateway` (nothing to ask: no default route, no
 * gateway found), `no-answer` (asked, nothing came back in time), `refused` (the gateway answered
 * with an error), `failed` (anything else: a socket error, a reply that makes no sense).
 */
export type PortMappingErrorCode = 'no-gateway' | 'no-answer' | 'refused' | 'failed';

/** Why a gateway did not map the port; the message is the reason the daemon logs. */
export class PortMappingError extends CodedError<PortMappingErrorCode> {
  override readonly name = 'PortMappingError';
}

/** True when `err` is a {@link PortMappingError}. */
export const isPortMappingError = codedErrorGuard(PortMappingError);

/**
 * The reason to log for a failure of `protocol`: the error's first line (a client's message
 * already says which protocol; any other text gets the protocol's name in front).
 */
export function failureReason(protocol: PortMappingProtocol, err: unknown): string {
  const name = PROTOCOL_NAMES[protocol];
  const text = err instanceof Error ? err.message : String(err);
  const line = redactText(text.split('\n')[0] ?? text);
  return isPortMappingError(err) && line.startsWith(`${name}: `) ? line : `${name}: ${line}`;
}

/** A signal that aborts with `signal` or after `timeoutMs`, whichever comes first. */
export function withTimeout(signal: AbortSignal, timeoutMs: number): AbortSignal {
  // Not `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: Node holds the timeout signal of
  // such a pair weakly, and when the garbage collector takes it first the deadline never comes
  // (seen here: a NAT-PMP request without an answer waited for good). The timer's callback holds
  // this controller for as long as the deadline matters.
  const controller = new AbortController();
  if (signal.aborted) {
    controller.abort(signal.reason);
    return controller.signal;
  }
  const onAbort = () => {
    clearTimeout(timer);
    controller.abort(signal.reason);
  };
  const timer = setTimeout(() => {
    signal.removeEventListener('abort', onAbort);
    controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError'));
  }, timeoutMs);
  signal.addEventListener('abort', onAbort, { once: true });
  return controller.signal;
}
