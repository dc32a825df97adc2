/**
 * Batched UDP I/O on a Node `dgram` socket, through a small native addon (`native/udp_batch.c`).
 *
 * Sending ({@link UdpBatchSender}): every packet of a flush leaves in one `sendmmsg(2)` call, with
 * UDP generic segmentation offload (`UDP_SEGMENT`) for runs of equal-sized packets to one
 * destination. Packets are written straight into the batch's buffer, so nobody copies them; the
 * kernel copies them once, in the call. When the addon is not built, the socket's send buffer is
 * full, or the kernel refuses a batch, the packets left go through `dgram.send` in order, and
 * later batches follow them there until they have left.
 *
 * Receiving ({@link UdpBatchReceiver}): every datagram waiting is read by one `recvmmsg(2)` into
 * memory allocated once, and JavaScript runs once per read; without the addon, `message` events
 * feed the same callbacks.
 */
export { isUdpBatchError, UdpBatchError, type UdpBatchErrorCode, type UdpDestination } from './errors.js';
export { type NativeSupport, nativeSupport } from './native.js';
export {
  UdpBatchReceiver,
  type UdpBatchReceiverOptions,
  type UdpBatchReceiverStats,
  type UdpReceiveMode,
} from './receiver.js';
export {
  UdpBatchSender,
  type UdpBatchSenderOptions,
  type UdpBatchStats,
  type UdpSendMode,
} from './sender.js';
