import { type Logger, silentLogger } from '@svc/runtime';
import type { CaptureTime } from '../types.js';
import type { SenderReport } from './rtcp.js';

/** Options of {@link CaptureClock}. */
export interface CaptureClockOptions {
  /** The stream's RTP clock rate, Hz (90 000 for every video payload format here). */
  readonly clockRate: number;
  /**
   * A mapped time further than this from the access unit's arrival is not believed (the camera's
   * clock is not synchronised with the robot's) and the arrival is used instead. Default 5000 ms.
   */
  readonly maxSkewMs?: number;
  readonly logger?: Logger;
}

/** Default of {@link CaptureClockOptions.maxSkewMs}. */
export const DEFAULT_MAX_CAPTURE_SKEW_MS = 5000;

/** Sender reports of this many sources are kept (a restarted camera picks a new SSRC). */
const MAX_SOURCES = 4;

/** Counters of a {@link CaptureClock}. */
export interface CaptureClockStats {
  /** Sender reports taken in. */
  senderReports: number;
  /** Access units timed by a sender report. */
  mapped: number;
  /** Access units timed by their arrival: no sender report for their source yet. */
  arrival: number;
  /** Access units timed by their arrival because the mapped time was too far from it. */
  unsynchronised: number;
}

/**
 * When each access unit was captured, on the camera's wall clock: RTCP sender reports tie the
 * stream's RTP clock to it (RFC 3550 §6.4.1), and an RTP timestamp is mapped from the latest
 * report of its source, extrapolated at the nominal clock rate (the signed 32-bit difference, so
 * the RTP clock's wrap does not matter). Without a report, or when the mapping lands more than
 * {@link CaptureClockOptions.maxSkewMs} from the arrival, the arrival is the capture time.
 */
export class CaptureClock {
  readonly stats: CaptureClockStats = { senderReports: 0, mapped: 0, arrival: 0, unsynchronised: 0 };
  readonly #clockRate: number;
  readonly #maxSkewMs: number;
  readonly #logger: Logger;
  /** The latest report per SSRC, oldest source first. */
  readonly #reports = new Map<number, SenderReport>();
  #skewLogged = false;

  /** @throws TypeError when the clock rate or the skew bound is not a positive number. */
  constructor(options: CaptureClockOptions) {
    if (!(options.clockRate > 0) || !Number.isFinite(options.clockRate)) {
      throw new TypeError(`RTP clock rate must be a positive number, got ${options.clockRate}`);
    }
    const maxSkewMs = options.maxSkewMs ?? DEFAULT_MAX_CAPTURE_SKEW_MS;
    if (!(maxSkewMs > 0)) throw new TypeError(`maxSkewMs must be a positive number, got ${maxSkewMs}`);
    this.#clockRate = options.clockRate;
    this.#maxSkewMs = maxSkewMs;
    this.#logger = options.logger ?? silentLogger;
  }

  /** True once a sender report of `ssrc` came. */
  hasReport(ssrc: number): boolean {
    return this.#reports.has(ssrc);
  }

  /** Takes one sender report; it replaces the previous one of its source. */
  handleSenderReport(report: SenderReport): void {
    this.stats.senderReports++;
    this.#reports.delete(report.ssrc);
    this.#reports.set(report.ssrc, report);
    if (this.#reports.size > MAX_SOURCES) {
      const oldest = this.#reports.keys().next().value;
      if (oldest !== undefined) this.#reports.delete(oldest);
    }
  }

  /**
   * The capture time of an access unit of source `ssrc` with `rtpTimestamp`, whose first packet
   * arrived at `arrivalWallMs` (wall clock).
   */
  captureTime(ssrc: number | undefined, rtpTimestamp: number, arrivalWallMs: number): CaptureTime {
    const report = ssrc === undefined ? undefined : this.#reports.get(ssrc);
    if (report === undefined) {
      this.stats.arrival++;
      return { wallMs: arrivalWallMs, source: 'arrival' };
    }
    const ticks = (rtpTimestamp - report.rtpTimestamp) | 0;
    const wallMs = report.wallMs + (ticks * 1000) / this.#clockRate;
    const skewMs = wallMs - arrivalWallMs;
    if (Math.abs(skewMs) > this.#maxSkewMs) {
      this.stats.unsynchronised++;
      if (!this.#skewLogged) {
        this.#skewLogged = true;
        this.#logger.warn(
          { skewMs: Math.round(skewMs), maxSkewMs: this.#maxSkewMs },
          `the camera's sender reports put its frames more than ${this.#maxSkewMs / 1000} s from their ` +
            "arrival: its clock is not synchronised with the robot's (run NTP or PTP on both); capture " +
            'times fall back to arrival',
        );
      }
      return { wallMs: arrivalWallMs, source: 'arrival' };
    }
    this.stats.mapped++;
    return { wallMs, source: 'sender-report' };
  }

  /** Forgets every report (a new stream description). */
  reset(): void {
    this.#reports.clear();
  }
}
