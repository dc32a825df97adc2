/**
 * `@svc/transport/h3`: the byte level of WebTransport over HTTP/3. QUIC varints, HTTP/3 frames and
 * stream preambles, SETTINGS, QPACK (static table only), capsules, HTTP/3 datagrams and the
 * extended CONNECT check. No I/O: the session layer feeds stream bytes in and writes what comes out.
 *
 * @packageDocumentation
 */

export {
  CAPSULE_TYPE,
  type Capsule,
  CapsuleReader,
  type CapsuleReaderOptions,
  capsule,
  DEFAULT_MAX_CAPSULE_PAYLOAD,
  encodeCapsule,
  MAX_CLOSE_REASON_BYTES,
} from './capsules.js';
export {
  H3_ERROR,
  type H3ErrorCode,
  h3CodeToWebTransport,
  h3ErrorCodeFor,
  WEBTRANSPORT_ERROR_FIRST,
  WEBTRANSPORT_ERROR_LAST,
  webTransportCodeToH3,
} from './codes.js';
export { decodeDatagram, encodeDatagram, type H3Datagram, h3Datagram } from './datagram.js';
export {
  DEFAULT_MAX_FRAME_PAYLOAD,
  encodeControlStreamPreamble,
  encodeDataFrameHeader,
  encodeFrame,
  encodeUniStreamPreamble,
  encodeWebTransportBidiPreamble,
  FRAME_TYPE,
  FrameReader,
  type FrameReaderEvent,
  type FrameReaderOptions,
  type FrameStreamRole,
  type H3Frame,
  h3Frame,
  type OutgoingFrame,
  STREAM_TYPE,
  WEBTRANSPORT_STREAM_SIGNAL,
} from './frames.js';
export { HUFFMAN_CODE_LENGTHS, HUFFMAN_CODES, HUFFMAN_EOS, huffmanDecode } from './huffman.js';
export {
  DEFAULT_MAX_FIELD_SECTION_SIZE,
  type DecodeHeadersOptions,
  decodeHeaders,
  encodeHeaders,
  fieldSection,
  type HeaderField,
  type HeaderList,
  latin1Decode,
  latin1Encode,
  prefixedIntLength,
  QpackEncoderStreamReader,
  readPrefixedInt,
  writePrefixedInt,
} from './qpack.js';
export {
  DRAFT02_REQUEST_HEADER,
  DRAFT02_RESPONSE_HEADER,
  encodeWebTransportResponse,
  parseWebTransportRequest,
  type RequestCheck,
  type RequestProblem,
  type ResponseOptions,
  WEBTRANSPORT_PROTOCOL,
  type WebTransportRequest,
  webTransportResponseHeaders,
} from './request.js';
export {
  decodeSettings,
  encodeSettings,
  type PeerWebTransportSupport,
  peerWebTransportSupport,
  SETTING,
  type ServerSettingsOptions,
  type Settings,
  type SettingsInput,
  type SettingsList,
  serverSettings,
  settingsPayload,
} from './settings.js';
export { QPACK_STATIC_TABLE } from './static-table.js';
export {
  type UniStreamEvent,
  type UniStreamKind,
  UniStreamReader,
  type UniStreamReaderOptions,
} from './streams.js';
export {
  encodeVarint,
  isReservedId,
  MAX_SAFE_VARINT,
  MAX_VARINT,
  readVarint,
  readVarintBig,
  readVarintId,
  varintLength,
  varintLengthBig,
  varintLengthOfFirstByte,
  writeVarint,
  writeVarintBig,
} from './varint.js';
