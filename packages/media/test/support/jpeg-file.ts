/** One marker segment of a JPEG file. */
export interface JpegSegment {
  /** Marker code (the byte after 0xFF). */
  readonly marker: number;
  /** Offset of the 0xFF that starts the segment. */
  readonly offset: number;
  /** The segment's body, after the length field. */
  readonly body: Uint8Array;
}

/** The header segments of a JPEG file and where its scan data starts. */
export interface JpegLayout {
  readonly segments: readonly JpegSegment[];
  readonly scanStart: number;
}

/**
 * Walks the segments of a JPEG file from SOI up to and including SOS, checking every length
 * against the file. Throws an `Error` naming the offset where the file stops making sense.
 */
export function readJpegLayout(file: Uint8Array): JpegLayout {
  if (file[0] !== 0xff || file[1] !== 0xd8) {
    throw new Error('no SOI at offset 0');
  }
  const segments: JpegSegment[] = [];
  let at = 2;
  for (;;) {
    if (at + 4 > file.length) {
      throw new Error(`segment at ${at} runs past the end`);
    }
    if (file[at] !== 0xff) {
      throw new Error(`no marker at ${at}`);
    }
    const marker = file[at + 1]!;
    const length = (file[at + 2]! << 8) | file[at + 3]!;
    if (length < 2 || at + 2 + length > file.length) {
      throw new Error(`segment ${marker.toString(16)} at ${at} has bad length ${length}`);
    }
    segments.push({ marker, offset: at, body: file.subarray(at + 4, at + 2 + length) });
    at += 2 + length;
    if (marker === 0xda) {
      return { segments, scanStart: at };
    }
  }
}

/** The bodies of all segments with `marker`, in file order. */
export function segmentBodies(layout: JpegLayout, marker: number): Uint8Array[] {
  return layout.segments.filter((segment) => segment.marker === marker).map((segment) => segment.body);
}
