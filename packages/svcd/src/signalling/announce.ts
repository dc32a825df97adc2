/**
 * The robot's `announce`: how pilots reach it, built afresh from the daemon's current state for
 * every connection and every change.
 */
import type { Logger } from '@svc/runtime';
import {
  encodeSignalMessage,
  type SessionBackend,
  type SignalCandidate,
  type SignalChannel,
  type SignalClientMessage,
} from '@svc/wire';
import { describeError } from './remedies.js';

/** What the robot announces, read afresh for every `announce` (the open sessions are added). */
export interface AnnounceState {
  readonly candidates: readonly SignalCandidate[];
  /** SHA-256 of the current certificate, and of the previous one during a rotation, hex. */
  readonly cert_hashes: readonly string[];
  readonly channels: readonly SignalChannel[];
  readonly max_sessions: number;
  readonly relay: boolean;
  /** `[agent] driver_grace_ms`, so the cloud keeps the driver slot for the same user as long. */
  readonly driver_grace_ms: number;
  /** The transports sessions are served on (absent: `quic` only). */
  readonly backends?: readonly SessionBackend[];
}

/** A session open on the robot, as `announce.sessions` and `session-started` carry it. */
export interface SignallingSession {
  readonly session_id: string;
  readonly role: 'driver' | 'observer';
  /** The pilot's subject (`sub` of the pilot session token). */
  readonly sub: string;
}

/** Most candidates one `announce` may carry (the schema's limit). */
export const MAX_CANDIDATES = 16;

/** An encoded `announce`, and the key that tells whether anything but its sessions changed. */
export interface BuiltAnnounce {
  readonly text: string;
  readonly key: string;
}

/**
 * Builds `announce` messages from the daemon's callback, logging a failure once rather than at
 * every heartbeat that tries again.
 */
export class AnnounceBuilder {
  readonly #read: () => AnnounceState;
  readonly #logger: Logger;
  /** The last failure logged. */
  #error: string | undefined;

  constructor(read: () => AnnounceState, logger: Logger) {
    this.#read = read;
    this.#logger = logger;
  }

  /**
   * The announce for `sessions`, or `undefined` when it cannot be built (logged).
   *
   * @param quiet - Skip the warning about too many candidates (a heartbeat's re-check).
   */
  build(sessions: readonly SignallingSession[], quiet: boolean): BuiltAnnounce | undefined {
    let state: AnnounceState;
    try {
      state = this.#read();
    } catch (err) {
      this.#failed(`cannot build the signalling announce: ${describeError(err)}`);
      return undefined;
    }
    let candidates = state.candidates;
    if (candidates.length > MAX_CANDIDATES) {
      if (!quiet) {
        this.#logger.warn(
          { found: candidates.length },
          `more than ${MAX_CANDIDATES} candidates; announcing the first ${MAX_CANDIDATES}`,
        );
      }
      candidates = candidates.slice(0, MAX_CANDIDATES);
    }
    const message: SignalClientMessage = {
      type: 'announce',
      candidates: [...candidates],
      cert_hashes: [...state.cert_hashes],
      channels: [...state.channels],
      max_sessions: state.max_sessions,
      relay: state.relay,
      driver_grace_ms: state.driver_grace_ms,
      ...(state.backends !== undefined && { backends: [...state.backends] }),
      sessions: [...sessions],
    };
    let text: string;
    try {
      text = encodeSignalMessage(message);
    } catch (err) {
      this.#failed(`cannot announce this robot: ${describeError(err)}`);
      return undefined;
    }
    this.#error = undefined;
    return { text, key: JSON.stringify({ ...message, sessions: [] }) };
  }

  #failed(text: string): void {
    if (this.#error !== text) this.#logger.error({}, text);
    this.#error = text;
  }
}
