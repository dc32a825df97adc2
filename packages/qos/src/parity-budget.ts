import {
  CHUNK_HEADER_BYTES,
  DEFAULT_MAX_BLOCK_DATA,
  DEFAULT_MAX_DATAGRAM_BYTES,
  FRAME_INFO_BYTES,
  type ParityPolicy,
  parityCountFor,
} from '@svc/wire';

/**
 * Parity bytes the packer adds to one frame of `frameBytes` under `policy`, with the packer's
 * default datagram size and block size. It follows the packer's layout (equal chunks, blocks
 * sharing the chunks out evenly, a one-chunk block's parity as long as that chunk), so a small
 * frame's floor of parity chunks is counted at its real cost, not as a rate.
 */
export function parityBytesPerFrame(frameBytes: number, policy: ParityPolicy): number {
  const total = FRAME_INFO_BYTES + Math.max(0, Math.ceil(frameBytes));
  const maxPayload = DEFAULT_MAX_DATAGRAM_BYTES - CHUNK_HEADER_BYTES;
  const chunksAtMax = Math.ceil(total / maxPayload);
  const symbolSize = Math.ceil(total / chunksAtMax);
  const chunks = Math.ceil(total / symbolSize);
  const lastChunk = total - (chunks - 1) * symbolSize;
  const blocks = Math.ceil(chunks / DEFAULT_MAX_BLOCK_DATA);
  const base = Math.floor(chunks / blocks);
  const larger = chunks % blocks;
  let bytes = 0;
  for (let b = 0; b < blocks; b++) {
    const dataCount = base + (b < larger ? 1 : 0);
    const symbol = dataCount === 1 && b === blocks - 1 ? lastChunk : symbolSize;
    bytes += parityCountFor(dataCount, policy) * symbol;
  }
  return bytes;
}

/**
 * Parity bitrate (kbit/s, payload only) of a video stream of `videoKbps` at `fps` whose frames
 * are all the average size, under `policy`. The controller keeps `video + parity` inside the
 * ceiling with it. Keyframes are not counted apart: with intra refresh there are none, and
 * otherwise one every `maxGopMs` is a small share of the bytes.
 */
export function parityKbpsFor(videoKbps: number, fps: number, policy: ParityPolicy): number {
  const frameBytes = (videoKbps * 1000) / 8 / fps;
  return (parityBytesPerFrame(frameBytes, policy) * 8 * fps) / 1000;
}
