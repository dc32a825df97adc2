import { type Clock, CodedError, codedErrorGuard, systemClock } from '@svc/runtime';
import {
  encodeSignalMessage,
  parseSignalServerMessage,
  SIGNAL_SUBPROTOCOL,
  type SignalCandidate,
  type SignalChannel,
  type SignalServerMessage,
  WireError,
} from '@svc/wire';

/** What the signalling server answered a pilot's `connect`: how to reach the robot and as what. */
export interface RobotOffer {
  readonly sessionId: string;
  readonly robotId: string;
  readonly role: 'driver' | 'observer';
  /** `https://<address>:<port>/` for each candidate, in the robot's order. */
  readonly urls: readonly string[];
  readonly candidates: readonly SignalCandidate[];
  /** SHA-256 of the robot's certificates, hex: what `serverCertificateHashes` pins. */
  readonly certificateHashes: readonly string[];
  readonly channels: readonly SignalChannel[];
  readonly relay: boolean;
}

/** Why {@link requestOffer} failed. */
export type OfferErrorCode =
  | 'bad-token'
  | 'forbidden'
  | 'robot-offline'
  | 'unreachable'
  | 'protocol'
  | 'timeout';

/** A failed {@link requestOffer}; `code` says which, the message what to do. */
export class OfferError extends CodedError<OfferErrorCode> {
  override readonly name = 'OfferError';
}

/** Whether `err` is an {@link OfferError}, optionally with one `code`. */
export const isOfferError = codedErrorGuard(OfferError);

/** Options of {@link requestOffer}. */
export interface RequestOfferOptions {
  /** `wss://<host>/ws` of svc-cloud. */
  readonly signalUrl: string;
  /** A pilot session token for the robot (`POST /api/v1/session-tokens`). */
  readonly token: string;
  readonly robotId: string;
  /** Give up after this long (default 10 000 ms). */
  readonly timeoutMs?: number;
  /** WebSocket constructor (default the browser's). */
  readonly WebSocketImpl?: typeof WebSocket;
  /** Timers for the time limit (default `systemClock`). */
  readonly clock?: Clock;
}

/**
 * Asks svc-cloud for a session with a robot over signalling v2 (`docs/protocol/signalling.md`):
 * answers the challenge with the pilot session token, sends `connect`, and resolves with the
 * offer. The WebSocket is closed once the offer arrives: the session itself runs between the pilot
 * and the robot, and the robot reports its end to the server.
 */
export function requestOffer(options: RequestOfferOptions): Promise<RobotOffer> {
  const Impl = options.WebSocketImpl ?? WebSocket;
  const clock = options.clock ?? systemClock;
  return new Promise<RobotOffer>((resolve, reject) => {
    let settled = false;
    let socket: WebSocket;
    try {
      socket = new Impl(options.signalUrl, SIGNAL_SUBPROTOCOL);
    } catch (err) {
      reject(
        new OfferError('unreachable', `cannot open ${options.signalUrl}: ${String(err)}`, { cause: err }),
      );
      return;
    }
    const finish = (result: RobotOffer | OfferError) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(timer);
      socket.close(1000);
      if (result instanceof OfferError) reject(result);
      else resolve(result);
    };
    const timer = clock.setTimeout(
      () => finish(new OfferError('timeout', 'the signalling server did not answer in time; try again')),
      options.timeoutMs ?? 10_000,
    );
    socket.onerror = () =>
      finish(new OfferError('unreachable', 'the signalling server could not be reached; check the network'));
    socket.onclose = (event) =>
      finish(
        new OfferError(
          event.code === 4401 ? 'bad-token' : 'unreachable',
          event.code === 4401
            ? 'the pilot session token was refused (expired or not for this service); get a new one'
            : `the signalling connection closed (${event.code}) before an offer arrived`,
        ),
      );
    socket.onmessage = (event) => {
      if (typeof event.data !== 'string') return;
      const message = parseSignalServerMessage(event.data);
      if (message instanceof WireError) {
        finish(
          new OfferError('protocol', `unexpected message from the signalling server: ${message.message}`),
        );
        return;
      }
      const next = step(message, options);
      if (next === undefined) return;
      if (typeof next === 'string') socket.send(next);
      else finish(next);
    };
  });
}

/** What to do with one server message: a message to send, the outcome, or nothing. */
function step(
  message: SignalServerMessage,
  options: RequestOfferOptions,
): string | RobotOffer | OfferError | undefined {
  switch (message.type) {
    case 'challenge':
      return encodeSignalMessage({ type: 'auth', v: 2, token: options.token });
    case 'auth-ok':
      return encodeSignalMessage({ type: 'connect', robot_id: options.robotId });
    case 'offer':
      return {
        sessionId: message.session_id,
        robotId: message.robot_id,
        role: message.role,
        urls: message.candidates.map(candidateUrl),
        candidates: message.candidates,
        certificateHashes: message.cert_hashes,
        channels: message.channels,
        relay: message.relay,
      };
    case 'robot-offline':
      return new OfferError('robot-offline', `robot ${message.robot_id} is offline now; try again later`);
    case 'denied':
      return new OfferError(message.reason === 'bad-token' ? 'bad-token' : 'forbidden', message.message);
    case 'error':
      return new OfferError('protocol', message.message);
    case 'heartbeat-ack':
    case 'session-open':
    case 'session-revoked':
    // Driver slot news (handover) is not for a pilot waiting for its offer.
    case 'driver':
    case 'control-request':
    case 'control-pending':
    case 'control-result':
    case 'session-role':
      return undefined;
    default:
      return message satisfies never;
  }
}

/** `https://<address>:<port>/`, with IPv6 addresses in brackets. */
export function candidateUrl(candidate: SignalCandidate): string {
  const host = candidate.family === 'ipv6' ? `[${candidate.address}]` : candidate.address;
  return `https://${host}:${candidate.port}/`;
}
