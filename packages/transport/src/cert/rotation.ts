import { type Clock, systemClock, type TimerHandle } from '@svc/runtime';
import {
  type CertificateMaterial,
  createSelfSignedCertificate,
  DEFAULT_VALID_DAYS,
  type SelfSignedCertificateOptions,
} from './self-signed.js';

/** Anything that hands out the certificate new connections should present. */
export interface CertificateSource {
  /** The certificate and key to use for the next connection. */
  current(): CertificateMaterial;
}

/** Options of {@link CertificateRotation.start}. */
export interface CertificateRotationOptions {
  /** Common name of every certificate, for example the robot id. */
  commonName: string;
  /** Lifetime of each certificate in days; defaults to 10 (must stay below 14, Chromium's limit). */
  validDays?: number;
  /** Extra subjectAltName entries for every certificate. */
  altNames?: readonly string[];
  /**
   * Fraction of a certificate's lifetime after which the next one is made; defaults to 0.5.
   * With 0.5 the previous certificate stays valid as long as the new one has been in use, so a
   * pilot that still pins the previous hash can connect until it learns the new one.
   */
  rotateAt?: number;
  /**
   * A certificate to start with (one saved by a previous run), used while it has more than an
   * hour of validity left; otherwise a new one is made. Pilots that pinned it keep connecting
   * across a restart.
   */
  initial?: CertificateMaterial;
  /** Delay before retrying a failed rotation, in milliseconds; defaults to 60 000. */
  retryDelayMs?: number;
  /**
   * Time and timers; defaults to the process's (`systemClock`, whose timers do not keep it
   * alive). Certificate validity is reckoned on its wall clock (`wallNow()`).
   */
  clock?: Clock;
  /** Makes a certificate; defaults to {@link createSelfSignedCertificate}. Injected by tests. */
  generate?: (options: SelfSignedCertificateOptions) => Promise<CertificateMaterial>;
  /** Called after each rotation with the new and the previous certificate; announce `hashes()` here. */
  onRotate?: (current: CertificateMaterial, previous: CertificateMaterial) => void;
  /**
   * Called when a scheduled rotation fails (it is retried after `retryDelayMs`). Without it the
   * error is rethrown as an uncaught exception rather than lost.
   */
  onError?: (err: unknown) => void;
}

/** Node timers hold at most 2^31 - 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Keeps a current self-signed certificate and replaces it before it expires.
 *
 * The previous certificate is kept while it is still valid, so {@link CertificateRotation.hashes}
 * announces both and pilots holding either hash can connect. New QUIC connections use
 * {@link CertificateRotation.current}; connections already open keep the certificate they
 * started with.
 */
export class CertificateRotation implements CertificateSource {
  readonly #options: Readonly<
    Required<Omit<CertificateRotationOptions, 'onRotate' | 'onError' | 'altNames' | 'initial'>>
  > & {
    readonly altNames: readonly string[];
  };
  readonly #onRotate: CertificateRotationOptions['onRotate'];
  readonly #onError: CertificateRotationOptions['onError'];
  #current: CertificateMaterial;
  #previous: CertificateMaterial | undefined;
  #timer: TimerHandle | undefined;
  #stopped = false;
  #rotating: Promise<CertificateMaterial> | undefined;

  private constructor(options: CertificateRotationOptions, first: CertificateMaterial) {
    this.#options = Object.freeze({
      commonName: options.commonName,
      validDays: options.validDays ?? DEFAULT_VALID_DAYS,
      altNames: options.altNames ?? [],
      rotateAt: options.rotateAt ?? 0.5,
      retryDelayMs: options.retryDelayMs ?? 60_000,
      clock: options.clock ?? systemClock,
      generate: options.generate ?? createSelfSignedCertificate,
    });
    this.#onRotate = options.onRotate;
    this.#onError = options.onError;
    this.#current = first;
  }

  /**
   * Makes the first certificate and schedules the rotations.
   *
   * @throws TypeError when the options are invalid.
   */
  static async start(options: CertificateRotationOptions): Promise<CertificateRotation> {
    const rotateAt = options.rotateAt ?? 0.5;
    if (!(Number.isFinite(rotateAt) && rotateAt > 0 && rotateAt < 1)) {
      throw new TypeError(`rotateAt must be a number between 0 and 1 (exclusive), got ${rotateAt}`);
    }
    const retryDelayMs = options.retryDelayMs ?? 60_000;
    if (!(Number.isFinite(retryDelayMs) && retryDelayMs > 0)) {
      throw new TypeError(`retryDelayMs must be a positive number, got ${retryDelayMs}`);
    }
    const clock = options.clock ?? systemClock;
    const generate = options.generate ?? createSelfSignedCertificate;
    const reusable =
      options.initial !== undefined && options.initial.notAfter.getTime() - clock.wallNow() > 3_600_000;
    const first = reusable ? options.initial! : await generate(certificateOptions(options, clock.wallNow()));
    const rotation = new CertificateRotation(options, first);
    rotation.#schedule();
    return rotation;
  }

  /** The certificate new connections present. */
  current(): CertificateMaterial {
    return this.#current;
  }

  /** The certificate in use before the last rotation, while it is still valid. */
  previous(): CertificateMaterial | undefined {
    const previous = this.#previous;
    if (previous === undefined) return undefined;
    return previous.notAfter.getTime() > this.#options.clock.wallNow() ? previous : undefined;
  }

  /** SHA-256 hashes to announce to pilots: the current certificate first, then the previous one if still valid. */
  hashes(): Uint8Array[] {
    const previous = this.previous();
    return previous === undefined ? [this.#current.sha256] : [this.#current.sha256, previous.sha256];
  }

  /** When the next rotation is due, in milliseconds since the epoch. */
  nextRotationAt(): number {
    const { notBefore, notAfter } = this.#current;
    const start = notBefore.getTime();
    return start + (notAfter.getTime() - start) * this.#options.rotateAt;
  }

  /**
   * Replaces the certificate now (for example after the clock jumped) and reschedules.
   * Concurrent calls share one rotation.
   *
   * @throws TypeError (as a rejection) after {@link CertificateRotation.stop}.
   */
  rotateNow(): Promise<CertificateMaterial> {
    if (this.#stopped) return Promise.reject(new TypeError('the certificate rotation is stopped'));
    this.#rotating ??= this.#rotate();
    return this.#rotating;
  }

  /** Cancels the scheduled rotation. The current certificate stays readable. */
  stop(): void {
    this.#stopped = true;
    this.#clearTimer();
  }

  async #rotate(): Promise<CertificateMaterial> {
    this.#clearTimer();
    const { clock, generate } = this.#options;
    let next: CertificateMaterial;
    try {
      next = await generate(certificateOptions(this.#options, clock.wallNow()));
    } catch (err) {
      this.#rotating = undefined;
      if (!this.#stopped) this.#arm(this.#options.retryDelayMs);
      throw err;
    }
    // Cleared before `onRotate` runs, so a rotation asked for from there is a new one.
    this.#rotating = undefined;
    const previous = this.#current;
    this.#previous = previous;
    this.#current = next;
    if (!this.#stopped) this.#schedule();
    this.#onRotate?.(next, previous);
    return next;
  }

  #schedule(): void {
    this.#arm(Math.max(0, this.nextRotationAt() - this.#options.clock.wallNow()));
  }

  #arm(delayMs: number): void {
    this.#clearTimer();
    const chunk = Math.min(delayMs, MAX_TIMER_MS);
    this.#timer = this.#options.clock.setTimeout(() => {
      this.#timer = undefined;
      if (this.#stopped) return;
      // A delay beyond one Node timer is covered by re-arming until the due time.
      if (chunk < delayMs) {
        this.#schedule();
        return;
      }
      this.rotateNow().catch((err: unknown) => {
        if (this.#onError !== undefined) this.#onError(err);
        else
          queueMicrotask(() => {
            throw err;
          });
      });
    }, chunk);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      this.#options.clock.clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }
}

/** Options for one generated certificate. */
function certificateOptions(
  options: Pick<CertificateRotationOptions, 'commonName' | 'validDays' | 'altNames'>,
  now: number,
): SelfSignedCertificateOptions {
  const result: SelfSignedCertificateOptions = { commonName: options.commonName, now };
  if (options.validDays !== undefined) result.validDays = options.validDays;
  if (options.altNames !== undefined) result.altNames = options.altNames;
  return result;
}
