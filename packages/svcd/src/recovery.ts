import {
  type QosProfile,
  RECOVERY_REQUEST_INTERVAL_MS,
  RecoveryLadder,
  type RecoveryRequest,
} from '@svc/qos';
import { type Clock, systemClock, type TimerHandle } from '@svc/runtime';
import type { PublisherControlMessage } from '@svc/wire';

/** Options of {@link ChannelRecovery}. */
export interface ChannelRecoveryOptions {
  /** The video channel's wire id. */
  readonly channel: number;
  readonly profile: QosProfile;
  /** `[agent] recovery_ladder`. */
  readonly ladder: boolean;
  /** Sends one publisher-control datagram (fire and forget). */
  readonly send: (message: PublisherControlMessage) => void;
  /** Time and the timer that releases a held-back request; default `systemClock`. */
  readonly clock?: Clock;
}

/**
 * Recovery requests of one video channel to its publisher: the ladder of `@svc/qos` (its 250 ms
 * limit included) fed with the channel's events, and a timer that releases a request the limit
 * held back. Without a `[publisher_control]` address nobody is asked and the next natural
 * keyframe serves.
 */
export class ChannelRecovery {
  readonly #options: ChannelRecoveryOptions;
  readonly #ladder: RecoveryLadder;
  readonly #clock: Clock;
  #timer: TimerHandle | undefined;
  #closed = false;

  constructor(options: ChannelRecoveryOptions) {
    this.#options = options;
    this.#clock = options.clock ?? systemClock;
    this.#ladder = new RecoveryLadder({
      recoveryGraceMs: options.profile.recoveryGraceMs,
      enabled: options.ladder,
    });
  }

  /** The ladder's counters. */
  get stats() {
    return this.#ladder.stats;
  }

  /** A pilot joined without a current picture, or asked for a keyframe: `idr`, outside the ladder. */
  keyframeNeeded(reason: 'join' | 'pilot-request'): void {
    this.#emit(this.#ladder.handleKeyframeRequest(this.#clock.now(), reason));
  }

  /** A pilot reported a frame it could not repair, or the send path dropped frames. */
  lossReported(reason: string): void {
    this.#emit(this.#ladder.handleLoss(this.#clock.now(), reason));
  }

  /** The driver changed the profile: its `recovery_grace_ms` from now on. */
  setProfile(profile: QosProfile): void {
    this.#ladder.setRecoveryGraceMs(profile.recoveryGraceMs);
  }

  /** A keyframe came from the publisher. */
  recoveryPoint(): void {
    this.#ladder.handleRecoveryPoint(this.#clock.now());
  }

  /** Stops asking: a held-back request is dropped with its timer. */
  close(): void {
    this.#closed = true;
    this.#clock.clearTimeout(this.#timer);
  }

  #emit(request: RecoveryRequest | null): void {
    if (this.#closed) return;
    if (request !== null) {
      this.#options.send({ type: 'recovery-request', channel: this.#options.channel, ...request });
    }
    // A request the limit held back goes out when the limit allows.
    if (this.#ladder.pending !== null && this.#timer === undefined) {
      this.#timer = this.#clock.setTimeout(() => {
        this.#timer = undefined;
        this.#emit(this.#ladder.handleTick(this.#clock.now()));
      }, RECOVERY_REQUEST_INTERVAL_MS);
    }
  }
}
