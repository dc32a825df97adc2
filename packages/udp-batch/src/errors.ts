import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of {@link UdpBatchError}.
 *
 * - `closed`: the socket is closed.
 * - `batch-full`: a packet does not fit in an empty batch (larger than `capacityBytes`).
 * - `not-bound`: a receiver needs a bound socket.
 */
export type UdpBatchErrorCode = 'closed' | 'batch-full' | 'not-bound';

/** The one error class of this package; branch on `code`. */
export class UdpBatchError extends CodedError<UdpBatchErrorCode> {
  override readonly name = 'UdpBatchError';
}

/** True when `err` is a {@link UdpBatchError}, optionally with the given code. */
export const isUdpBatchError = codedErrorGuard(UdpBatchError);

/** Where a packet goes, or where it came from: an IP address literal and a UDP port. */
export interface UdpDestination {
  /** IPv4 or IPv6 literal (an IPv4 literal on an IPv6 socket is sent to its IPv4-mapped address). */
  readonly host: string;
  /** UDP port. */
  readonly port: number;
}
