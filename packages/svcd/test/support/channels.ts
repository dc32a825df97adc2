/** `[[channel]]` lines of the robot configurations the tests write. */

/** `[[channel]]` lines of one video channel called `front`. */
export function videoChannel(input: string, codec: string): string[] {
  return [
    '[[channel]]',
    'kind = "video"',
    'name = "front"',
    `input = "${input}"`,
    `codec = "${codec}"`,
    'fps = 30',
  ];
}

/** Where the two layers of {@link twoLayerVideoChannel} come from, and when the high one fits. */
export interface TwoLayerPorts {
  /** The RTP port of the `low` layer. */
  readonly lowPort: number;
  /** The RTP port of the `high` layer. */
  readonly highPort: number;
  /** The high layer's `min_bitrate_kbps`: below this request the low layer is forwarded. */
  readonly highMinBitrateKbps: number;
}

/** `[[channel]]` lines of one H.264 video channel called `front` with two layers, `low` and `high`. */
export function twoLayerVideoChannel({ lowPort, highPort, highMinBitrateKbps }: TwoLayerPorts): string[] {
  return [
    '[[channel]]',
    'kind = "video"',
    'name = "front"',
    'codec = "avc1.42c00d"',
    'fps = 30',
    '[[channel.layer]]',
    'name = "low"',
    `input = "rtp://127.0.0.1:${lowPort}"`,
    '[[channel.layer]]',
    'name = "high"',
    `input = "rtp://127.0.0.1:${highPort}"`,
    `min_bitrate_kbps = ${highMinBitrateKbps}`,
  ];
}
