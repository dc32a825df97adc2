import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of {@link WireError}. Callers branch on `code`, never on the message.
 *
 * - `short-datagram`: fewer bytes than the fixed chunk header.
 * - `unknown-version`: the header's version is not one this build speaks.
 * - `bad-channel`: channel id 0 (reserved).
 * - `counts-out-of-range`: data/parity counts or the chunk index do not describe a valid block.
 * - `parity-without-data`: parity chunks announced for a block with no data chunks.
 * - `length-out-of-range`: a length field points beyond the datagram or disagrees with the block.
 * - `reserved-bits`: a bit that must be zero in this version is set.
 * - `frame-info-short`: a reassembled frame is too short to hold its frame info.
 * - `frame-too-large`: a frame exceeds the reassembler's size limit.
 * - `unrecoverable`: fewer chunks than data chunks were given to the erasure decoder.
 * - `chunk-mismatch`: chunks of one block disagree (sizes or counts), so the block cannot be trusted.
 * - `control-message`: a control-stream line that is not JSON, breaks the schema, or is too long.
 * - `signal-message`: a signalling message that is not JSON, breaks the schema, or is too long.
 * - `publisher-control`: a publisher-control datagram that is too long, not JSON, or breaks the schema.
 * - `relay-control`: a relay control datagram with no magic, an unknown type, or lengths that do not add up.
 */
export type WireErrorCode =
  | 'short-datagram'
  | 'unknown-version'
  | 'bad-channel'
  | 'counts-out-of-range'
  | 'parity-without-data'
  | 'length-out-of-range'
  | 'reserved-bits'
  | 'frame-info-short'
  | 'frame-too-large'
  | 'unrecoverable'
  | 'chunk-mismatch'
  | 'control-message'
  | 'signal-message'
  | 'publisher-control'
  | 'relay-control';

/** The one error class of `@svc/wire`: bad bytes from a peer, or a block that cannot be repaired. */
export class WireError extends CodedError<WireErrorCode> {
  override readonly name = 'WireError';
}

/** True when `err` is a {@link WireError}, optionally with the given code. */
export const isWireError = codedErrorGuard(WireError);
