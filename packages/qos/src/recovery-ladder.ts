import type { RECOVERY_KINDS } from '@svc/wire';
import { checkNow } from './clock.js';

/** A `recovery-request` kind: the rungs `ltr`, `intra_refresh`, `idr` in climbing order. */
export type RecoveryKind = (typeof RECOVERY_KINDS)[number];

const RUNGS: readonly RecoveryKind[] = ['ltr', 'intra_refresh', 'idr'];
const STRENGTH: Readonly<Record<RecoveryKind, number>> = { ltr: 0, intra_refresh: 1, idr: 2 };

/** At most one `recovery-request` per channel in this many ms (specification section 8). */
export const RECOVERY_REQUEST_INTERVAL_MS = 250;

/** After this long without loss the ladder is back on `ltr` (specification section 8). */
export const LADDER_QUIET_RESET_MS = 2000;

/** A `recovery-request` to send now (the caller adds `type` and `channel`). */
export interface RecoveryRequest {
  readonly kind: RecoveryKind;
  readonly reason: string;
}

/** Construction options of a {@link RecoveryLadder}. */
export interface RecoveryLadderOptions {
  /** The profile's `recoveryGraceMs`: how long a rung gets before loss makes it climb. */
  readonly recoveryGraceMs: number;
  /** `[agent] recovery_ladder` (default `true`); `false` makes every request `idr`. */
  readonly enabled?: boolean;
}

/** Counters of a {@link RecoveryLadder}. */
export interface RecoveryLadderStats {
  /** Requests returned to send. */
  readonly sent: number;
  /** Requests held back by the 250 ms limit (each is sent later, or made moot by a recovery point). */
  readonly delayed: number;
  /** Rungs climbed. */
  readonly climbs: number;
  /** Returns to `ltr` after two quiet seconds. */
  readonly resets: number;
}

interface Pending extends RecoveryRequest {
  /** The request is the ladder's (not only a pilot's keyframe request). */
  readonly ladder: boolean;
}

/**
 * The recovery ladder of one video channel (specification sections 3 and 6, rule 6). Loss asks
 * for the current rung (`ltr` first); a rung that has had `recoveryGraceMs` while loss continues
 * gives way to the next (`intra_refresh`, then `idr`, which is asked again each grace); two
 * quiet seconds bring it back to `ltr`. A pilot's `request-keyframe` is `idr` outside the ladder.
 * All requests of the channel share one limit of one per 250 ms: a request the limit holds back
 * is kept and returned by a later call (`handleTick`), so it is delayed, never lost. Pure: every
 * method takes `now` (ms, never going back).
 */
export class RecoveryLadder {
  #recoveryGraceMs: number;
  readonly enabled: boolean;
  #rung = 0;
  /** When the first request on the current rung was sent. */
  #rungSentAt: number | undefined;
  /** A ladder request was sent and no recovery point has arrived since. */
  #outstanding = false;
  #lastLossAt: number | undefined;
  #lastSentAt = Number.NEGATIVE_INFINITY;
  #pending: Pending | undefined;
  /** The request held back now has been counted in `delayed`. */
  #delayedCounted = false;
  #lastNow: number | undefined;
  #stats = { sent: 0, delayed: 0, climbs: 0, resets: 0 };

  constructor(options: RecoveryLadderOptions) {
    const { recoveryGraceMs, enabled = true } = options;
    this.#recoveryGraceMs = checkGrace(recoveryGraceMs);
    this.enabled = enabled;
    if (!enabled) this.#rung = RUNGS.length - 1;
  }

  /** How long a rung gets before continuing loss makes it climb, ms. */
  get recoveryGraceMs(): number {
    return this.#recoveryGraceMs;
  }

  /**
   * Another profile's grace from now on (the driver changed the profile); the rung, the pending
   * request and the 250 ms limit carry over.
   */
  setRecoveryGraceMs(recoveryGraceMs: number): void {
    this.#recoveryGraceMs = checkGrace(recoveryGraceMs);
  }

  /** The current rung, as of the last call (always `idr` when the ladder is disabled). */
  get rung(): RecoveryKind {
    return RUNGS[this.#rung]!;
  }

  /** The request held back by the 250 ms limit, if any. */
  get pending(): RecoveryRequest | null {
    return this.#pending === undefined ? null : { kind: this.#pending.kind, reason: this.#pending.reason };
  }

  /** Counters since construction. */
  get stats(): RecoveryLadderStats {
    return { ...this.#stats };
  }

  /**
   * Loss on the channel at `now`: a pilot reported a frame it could not repair, or the send path
   * dropped delta frames. Returns the request to send now, or `null` (the rung's request is still
   * within its grace, or the 250 ms limit holds it back until a later call).
   */
  handleLoss(now: number, reason = 'loss'): RecoveryRequest | null {
    this.#advance(now);
    this.#lastLossAt = now;
    if (this.#rungSentAt !== undefined && now - this.#rungSentAt >= this.recoveryGraceMs) {
      // The rung had its grace and loss continues: the next rung, or the top one again.
      if (this.#rung < RUNGS.length - 1) {
        this.#rung++;
        this.#stats.climbs++;
      }
      this.#rungSentAt = undefined;
      this.#outstanding = false;
    }
    if (!this.#outstanding) this.#queue({ kind: RUNGS[this.#rung]!, reason, ladder: true });
    return this.#release(now);
  }

  /**
   * A pilot's `request-keyframe` (or a joining pilot) at `now`: an `idr`, outside the ladder (the
   * rung does not move). Returns it, or `null` when the 250 ms limit holds it back.
   */
  handleKeyframeRequest(now: number, reason = 'request-keyframe'): RecoveryRequest | null {
    this.#advance(now);
    this.#queue({ kind: 'idr', reason, ladder: false });
    return this.#release(now);
  }

  /**
   * A recovery point (keyframe) arrived from the publisher at `now`: what was asked for is
   * answered, and a request still held back is no longer needed. The rung stays until two quiet
   * seconds pass.
   */
  handleRecoveryPoint(now: number): void {
    this.#advance(now);
    this.#outstanding = false;
    this.#pending = undefined;
    this.#delayedCounted = false;
  }

  /**
   * Time passing (call it at least every 250 ms while {@link pending} is set, and once a second
   * otherwise): returns a held-back request once the limit allows, and moves the rung back to
   * `ltr` after two quiet seconds.
   */
  handleTick(now: number): RecoveryRequest | null {
    this.#advance(now);
    return this.#release(now);
  }

  #advance(now: number): void {
    checkNow(now, this.#lastNow);
    this.#lastNow = now;
    if (this.#lastLossAt !== undefined && now - this.#lastLossAt >= LADDER_QUIET_RESET_MS) {
      this.#lastLossAt = undefined;
      this.#rungSentAt = undefined;
      this.#outstanding = false;
      if (this.enabled && this.#rung !== 0) {
        this.#rung = 0;
        this.#stats.resets++;
      }
    }
  }

  /** Keeps the stronger of `request` and the one already held back. */
  #queue(request: Pending): void {
    const held = this.#pending;
    if (held === undefined) {
      this.#pending = request;
      return;
    }
    const stronger = STRENGTH[request.kind] > STRENGTH[held.kind] ? request : held;
    this.#pending = { kind: stronger.kind, reason: stronger.reason, ladder: held.ladder || request.ladder };
  }

  #release(now: number): RecoveryRequest | null {
    const request = this.#pending;
    if (request === undefined) return null;
    if (now - this.#lastSentAt < RECOVERY_REQUEST_INTERVAL_MS) {
      if (!this.#delayedCounted) {
        this.#stats.delayed++;
        this.#delayedCounted = true;
      }
      return null;
    }
    this.#pending = undefined;
    this.#delayedCounted = false;
    this.#lastSentAt = now;
    this.#stats.sent++;
    if (request.ladder) {
      this.#outstanding = true;
      this.#rungSentAt ??= now;
    }
    return { kind: request.kind, reason: request.reason };
  }
}

function checkGrace(recoveryGraceMs: number): number {
  if (!Number.isFinite(recoveryGraceMs) || recoveryGraceMs <= 0) {
    throw new TypeError(`recoveryGraceMs must be a positive number of ms, got ${recoveryGraceMs}`);
  }
  return recoveryGraceMs;
}
