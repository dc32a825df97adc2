/** The RTP framings this package understands, selected by the channel's `codec` value. */
export type CodecFamily = 'h264' | 'h265' | 'mjpeg';

/** One parsed RTP packet (RFC 3550). `payload` excludes header, CSRCs, extension and padding. */
export interface RtpPacket {
  readonly marker: boolean;
  readonly payloadType: number;
  readonly sequenceNumber: number;
  readonly timestamp: number;
  readonly ssrc: number;
  readonly payload: Uint8Array;
}

/** What one access unit contained, for `svcd probe-input` and statistics. */
export interface AccessUnitDetails {
  /** NAL unit types in order (H.264/H.265); empty for Motion JPEG. */
  readonly nalTypes: readonly number[];
  /** Coded slices (slice segments for H.265) in the access unit; 1 for Motion JPEG. */
  readonly slices: number;
  /** A slice of type B was seen (H.264 slice_type 1/6, H.265 slice_type 0). */
  readonly bSlice: boolean;
  /** Parameter sets were present in the stream itself (before any were prepended from the cache). */
  readonly inBandParameterSets: boolean;
}

/** One whole access unit, ready to be chunked. */
export interface AccessUnit {
  /** The channel's configured codec string, unchanged. */
  readonly codec: string;
  /**
   * Annex B (start codes) for H.264/H.265; a complete JPEG file for Motion JPEG. With the
   * ingest's `lendAccessUnits`, valid during the callback that receives it only.
   */
  readonly data: Uint8Array;
  /** RTP timestamp of the access unit (32 bits). */
  readonly rtpTimestamp: number;
  /** The RTP timestamp unwrapped and converted to µs (monotonic within a stream). */
  readonly captureTimeUs: number;
  /** A random access point: H.264 IDR, H.265 IRAP, every Motion JPEG frame. */
  readonly keyframe: boolean;
  /** Local clock (ms, `performance.now()`) when the access unit's last packet arrived. */
  readonly receivedAtMs: number;
  readonly details: AccessUnitDetails;
}

/** Counters every depacketiser keeps. */
export interface DepacketizerStats {
  packets: number;
  accessUnits: number;
  keyframes: number;
  /** Access units dropped because a packet of theirs was lost or malformed. */
  droppedAccessUnits: number;
  /** Payloads skipped, by reason (e.g. `fu-b`, `mtap16`, `malformed`). */
  skipped: Record<string, number>;
}

/**
 * Turns the RTP packets of one stream, in sequence order, into access units. The caller reports
 * gaps with `handleLoss` so the access unit in progress is dropped rather than emitted broken.
 */
export interface Depacketizer {
  /** Takes one packet; returns the access units it completed (usually zero or one). */
  handlePacket(packet: RtpPacket, receivedAtMs: number): AccessUnit[];
  /** Packets were lost before the next one: the access unit in progress is incomplete. */
  handleLoss(): void;
  /** Forget all state (stream restart); cached parameter sets are kept unless `hard`. */
  reset(hard?: boolean): void;
  readonly stats: DepacketizerStats;
}

/**
 * When an access unit was captured, on the camera's wall clock (Unix ms), and how that is known:
 * from the source's RTCP sender reports, or (without them, or when they are not believable) the
 * arrival of the access unit's first packet at the robot.
 */
export interface CaptureTime {
  readonly wallMs: number;
  readonly source: 'sender-report' | 'arrival';
}
