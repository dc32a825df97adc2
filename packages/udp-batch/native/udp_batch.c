/*
 * udp_batch: batched UDP sends and receives for a Node.js dgram socket's file descriptor.
 *
 * Sending: one call hands the kernel every packet of a flush: sendmmsg(2) with one message per run of
 * packets to the same destination, and with UDP generic segmentation offload (UDP_SEGMENT, Linux
 * 4.18+) a run of equal-sized packets (the last may be shorter) travels as one message that the
 * kernel cuts into datagrams. The socket is non-blocking (libuv made it so): a full send buffer
 * ends the call early and the caller sends the rest another way.
 *
 * Receiving: recvmmsg(2) reads every datagram waiting into the caller's memory, and JavaScript
 * runs once per read instead of once per datagram (and no buffer is allocated per datagram).
 *
 * Exports:
 *   encodeAddress(host: string, port: number, ipv6Socket: boolean) -> Uint8Array(32)
 *     A destination in the form send() takes: 4 bytes socklen (native order), then the sockaddr.
 *     An IPv4 literal for an IPv6 socket becomes the IPv4-mapped address. Throws on a bad literal.
 *   send(fd, data, lengths, destinations, addresses, count, gsoSegments, result) -> undefined
 *     Packet i is lengths[i] bytes of data, packed back to back from offset 0; it goes to the
 *     address at addresses[32 * destinations[i]]. gsoSegments: most packets in one GSO message
 *     (0 or 1: no GSO). result (Int32Array(2)) receives [packets sent, errno of the failure that
 *     stopped the call or 0].
 *   startReceiver(fd, data, slotBytes, lengths, addresses, callback) -> External
 *     Batched receives: the descriptor is duplicated and watched for readability on Node's event
 *     loop; each time it is readable, recvmmsg(2) reads up to lengths.length datagrams, datagram i
 *     into data[i * slotBytes ..] (lengths[i] = its length, or -1 when it was longer than a slot
 *     and got truncated) and its source into addresses[32 * i] (the same slot form as
 *     encodeAddress), then callback(count) runs (callback(-errno) for a failed read). A few rounds
 *     per wake-up at most, so other work is not starved; the caller stops Node's own reads.
 *   stopReceiver(receiver) -> undefined: stops watching and closes the duplicate, once.
 *   formatAddress(addresses, slot) -> string: the IP address of a slot, as Node prints it.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <node_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <net/if.h>
#include <fcntl.h>
#include <unistd.h>
#include <uv.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define ADDRESS_SLOT 32
#define MAX_MESSAGES 1024
/* The kernel's limit for one GSO message is 64 segments and one IP datagram's payload. */
#define MAX_GSO_SEGMENTS 64
#define MAX_GSO_BYTES 65000

#define CHECK(call)                                                                                   \
  do {                                                                                                \
    if ((call) != napi_ok) {                                                                          \
      napi_throw_error(env, "ERR_UDP_BATCH_NAPI", "udp_batch: N-API call failed: " #call);            \
      return NULL;                                                                                    \
    }                                                                                                 \
  } while (0)

/* Scratch for one call, per Node environment (worker threads each load their own). */
typedef struct {
  struct mmsghdr messages[MAX_MESSAGES];
  struct iovec vectors[MAX_MESSAGES];
  union {
    char buf[CMSG_SPACE(sizeof(uint16_t))];
    struct cmsghdr align;
  } controls[MAX_MESSAGES];
  /* How many packets each message carries. */
  uint32_t packetsIn[MAX_MESSAGES];
} Scratch;

static void freeScratch(napi_env env, void* data, void* hint) {
  (void)env;
  (void)hint;
  free(data);
}

static napi_value throwType(napi_env env, const char* message) {
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", message);
  return NULL;
}

static int typedArray(napi_env env, napi_value value, napi_typedarray_type want, void** data, size_t* length) {
  bool is = false;
  if (napi_is_typedarray(env, value, &is) != napi_ok || !is) return 0;
  napi_typedarray_type type;
  napi_value buffer;
  size_t offset;
  if (napi_get_typedarray_info(env, value, &type, length, data, &buffer, &offset) != napi_ok) return 0;
  return type == want;
}

static napi_value EncodeAddress(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3) return throwType(env, "encodeAddress(host, port, ipv6Socket) takes three arguments");
  char host[64];
  size_t hostLength = 0;
  if (napi_get_value_string_utf8(env, argv[0], host, sizeof host, &hostLength) != napi_ok)
    return throwType(env, "encodeAddress: host must be a string");
  uint32_t port = 0;
  if (napi_get_value_uint32(env, argv[1], &port) != napi_ok || port > 65535)
    return throwType(env, "encodeAddress: port must be an integer from 0 to 65535");
  bool ipv6Socket = false;
  if (napi_get_value_bool(env, argv[2], &ipv6Socket) != napi_ok)
    return throwType(env, "encodeAddress: ipv6Socket must be a boolean");

  uint8_t slot[ADDRESS_SLOT];
  memset(slot, 0, sizeof slot);
  uint32_t length = 0;
  struct in_addr v4;
  struct in6_addr v6;
  /* A zone index (fe80::1%eth0) is not accepted: the daemon binds global or loopback addresses. */
  if (inet_pton(AF_INET, host, &v4) == 1) {
    if (ipv6Socket) {
      struct sockaddr_in6 a;
      memset(&a, 0, sizeof a);
      a.sin6_family = AF_INET6;
      a.sin6_port = htons((uint16_t)port);
      a.sin6_addr.s6_addr[10] = 0xff;
      a.sin6_addr.s6_addr[11] = 0xff;
      memcpy(&a.sin6_addr.s6_addr[12], &v4, 4);
      length = sizeof a;
      memcpy(slot + 4, &a, sizeof a);
    } else {
      struct sockaddr_in a;
      memset(&a, 0, sizeof a);
      a.sin_family = AF_INET;
      a.sin_port = htons((uint16_t)port);
      a.sin_addr = v4;
      length = sizeof a;
      memcpy(slot + 4, &a, sizeof a);
    }
  } else if (inet_pton(AF_INET6, host, &v6) == 1) {
    if (!ipv6Socket) return throwType(env, "encodeAddress: an IPv6 destination needs an IPv6 socket");
    struct sockaddr_in6 a;
    memset(&a, 0, sizeof a);
    a.sin6_family = AF_INET6;
    a.sin6_port = htons((uint16_t)port);
    a.sin6_addr = v6;
    length = sizeof a;
    memcpy(slot + 4, &a, sizeof a);
  } else {
    return throwType(env, "encodeAddress: host must be an IPv4 or IPv6 address literal");
  }
  memcpy(slot, &length, 4);

  void* out = NULL;
  napi_value arrayBuffer, result;
  CHECK(napi_create_arraybuffer(env, ADDRESS_SLOT, &out, &arrayBuffer));
  memcpy(out, slot, ADDRESS_SLOT);
  CHECK(napi_create_typedarray(env, napi_uint8_array, ADDRESS_SLOT, arrayBuffer, 0, &result));
  return result;
}

static napi_value Send(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 8) return throwType(env, "send() takes eight arguments");
  int32_t fd = -1;
  if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0)
    return throwType(env, "send: fd must be a non-negative integer");
  uint8_t* data;
  uint32_t* lengths;
  uint32_t* destinations;
  uint8_t* addresses;
  int32_t* result;
  size_t dataLength, lengthsLength, destinationsLength, addressesLength, resultLength;
  if (!typedArray(env, argv[1], napi_uint8_array, (void**)&data, &dataLength))
    return throwType(env, "send: data must be a Uint8Array");
  if (!typedArray(env, argv[2], napi_uint32_array, (void**)&lengths, &lengthsLength))
    return throwType(env, "send: lengths must be a Uint32Array");
  if (!typedArray(env, argv[3], napi_uint32_array, (void**)&destinations, &destinationsLength))
    return throwType(env, "send: destinations must be a Uint32Array");
  if (!typedArray(env, argv[4], napi_uint8_array, (void**)&addresses, &addressesLength))
    return throwType(env, "send: addresses must be a Uint8Array");
  uint32_t count = 0, gsoSegments = 0;
  if (napi_get_value_uint32(env, argv[5], &count) != napi_ok)
    return throwType(env, "send: count must be a non-negative integer");
  if (napi_get_value_uint32(env, argv[6], &gsoSegments) != napi_ok)
    return throwType(env, "send: gsoSegments must be a non-negative integer");
  if (!typedArray(env, argv[7], napi_int32_array, (void**)&result, &resultLength) || resultLength < 2)
    return throwType(env, "send: result must be an Int32Array of at least 2");
  if (count > lengthsLength || count > destinationsLength)
    return throwType(env, "send: count exceeds lengths or destinations");
  if (gsoSegments > MAX_GSO_SEGMENTS) gsoSegments = MAX_GSO_SEGMENTS;

  /* Check every packet against the buffers before the kernel sees a pointer. */
  size_t total = 0;
  for (uint32_t i = 0; i < count; i++) {
    if (lengths[i] == 0 || lengths[i] > dataLength - total)
      return throwType(env, "send: the packet lengths exceed data (or a length is 0)");
    total += lengths[i];
    if ((size_t)destinations[i] >= addressesLength / ADDRESS_SLOT)
      return throwType(env, "send: a destination index is outside addresses");
    uint32_t socklen;
    memcpy(&socklen, addresses + (size_t)destinations[i] * ADDRESS_SLOT, 4);
    if (socklen == 0 || socklen > ADDRESS_SLOT - 4)
      return throwType(env, "send: an address slot was not filled by encodeAddress");
  }

  Scratch* scratch = NULL;
  CHECK(napi_get_instance_data(env, (void**)&scratch));
  struct mmsghdr* messages = scratch->messages;
  struct iovec* vectors = scratch->vectors;
  uint32_t* packetsIn = scratch->packetsIn;
  uint32_t sent = 0;
  int error = 0;
  size_t offset = 0;
  uint32_t packet = 0;
  while (packet < count && error == 0) {
    /* Build up to MAX_MESSAGES messages from the packets left. */
    uint32_t m = 0;
    while (packet < count && m < MAX_MESSAGES) {
      uint32_t dest = destinations[packet];
      uint32_t segment = lengths[packet];
      uint32_t n = 1;
      size_t bytes = segment;
      if (gsoSegments > 1) {
        /* Equal-sized packets to one destination; a shorter one may end the run. */
        while (packet + n < count && n < gsoSegments && destinations[packet + n] == dest &&
               lengths[packet + n] <= segment && bytes + lengths[packet + n] <= MAX_GSO_BYTES) {
          bytes += lengths[packet + n];
          n++;
          if (lengths[packet + n - 1] < segment) break;
        }
      }
      struct msghdr* h = &messages[m].msg_hdr;
      memset(h, 0, sizeof *h);
      vectors[m].iov_base = data + offset;
      vectors[m].iov_len = bytes;
      h->msg_iov = &vectors[m];
      h->msg_iovlen = 1;
      uint32_t socklen;
      memcpy(&socklen, addresses + (size_t)dest * ADDRESS_SLOT, 4);
      h->msg_name = addresses + (size_t)dest * ADDRESS_SLOT + 4;
      h->msg_namelen = socklen;
      if (n > 1) {
        h->msg_control = scratch->controls[m].buf;
        h->msg_controllen = sizeof scratch->controls[m].buf;
        struct cmsghdr* c = CMSG_FIRSTHDR(h);
        c->cmsg_level = SOL_UDP;
        c->cmsg_type = UDP_SEGMENT;
        c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t size = (uint16_t)segment;
        memcpy(CMSG_DATA(c), &size, sizeof size);
      }
      packetsIn[m] = n;
      offset += bytes;
      packet += n;
      m++;
    }
    /* Hand them over; the kernel may take fewer than asked. */
    uint32_t done = 0;
    while (done < m) {
      int r = sendmmsg(fd, messages + done, m - done, 0);
      if (r < 0) {
        if (errno == EINTR) continue;
        error = errno;
        break;
      }
      for (int k = 0; k < r; k++) sent += packetsIn[done + k];
      done += (uint32_t)r;
      if (r == 0) {
        error = EAGAIN;
        break;
      }
    }
  }
  result[0] = (int32_t)sent;
  result[1] = error;
  return NULL;
}


/* ---- Batched receives ------------------------------------------------------------------------ */

/* recvmmsg rounds per readiness event: bounded, so one busy socket does not starve the loop. */
#define RECV_ROUNDS 4

typedef struct Receiver {
  uv_poll_t poll;
  napi_env env;
  int fd;
  /* stopReceiver ran (or the environment is going away): deliver nothing more. */
  int stopped;
  /* The environment is being torn down: no N-API calls in the close callback. */
  int envGone;
  napi_ref callback;
  napi_ref dataRef;
  napi_ref lengthsRef;
  napi_ref addressesRef;
  napi_async_context context;
  uint8_t* data;
  int32_t* lengths;
  uint8_t* addresses;
  uint32_t slots;
  uint32_t slotBytes;
  struct mmsghdr* messages;
  struct iovec* vectors;
} Receiver;

static void receiverClosed(uv_handle_t* handle) {
  Receiver* r = (Receiver*)handle->data;
  if (!r->envGone) {
    napi_delete_reference(r->env, r->callback);
    napi_delete_reference(r->env, r->dataRef);
    napi_delete_reference(r->env, r->lengthsRef);
    napi_delete_reference(r->env, r->addressesRef);
    napi_async_destroy(r->env, r->context);
  }
  free(r->messages);
  free(r->vectors);
  free(r);
}

static void receiverStop(Receiver* r) {
  if (r->stopped) return;
  r->stopped = 1;
  uv_poll_stop(&r->poll);
  close(r->fd);
  r->fd = -1;
  uv_close((uv_handle_t*)&r->poll, receiverClosed);
}

static void receiverEnvCleanup(void* arg) {
  Receiver* r = (Receiver*)arg;
  r->envGone = 1;
  receiverStop(r);
}

/* Runs the JavaScript callback with one integer; an exception becomes an uncaught exception. */
static void receiverCall(Receiver* r, int32_t value) {
  napi_env env = r->env;
  napi_value callback, global, argument, result;
  if (napi_get_reference_value(env, r->callback, &callback) != napi_ok || callback == NULL) return;
  if (napi_get_global(env, &global) != napi_ok) return;
  if (napi_create_int32(env, value, &argument) != napi_ok) return;
  napi_status status = napi_make_callback(env, r->context, global, callback, 1, &argument, &result);
  if (status == napi_pending_exception) {
    napi_value error;
    if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
  }
}

static void receiverReadable(uv_poll_t* handle, int status, int events) {
  (void)events;
  Receiver* r = (Receiver*)handle->data;
  if (r->stopped) return;
  napi_handle_scope scope;
  if (napi_open_handle_scope(r->env, &scope) != napi_ok) return;
  if (status < 0) {
    receiverCall(r, status);
  } else {
    for (int round = 0; round < RECV_ROUNDS && !r->stopped; round++) {
      for (uint32_t i = 0; i < r->slots; i++) {
        struct msghdr* h = &r->messages[i].msg_hdr;
        h->msg_namelen = ADDRESS_SLOT - 4;
        h->msg_flags = 0;
      }
      int n;
      do {
        n = recvmmsg(r->fd, r->messages, r->slots, MSG_DONTWAIT, NULL);
      } while (n < 0 && errno == EINTR);
      if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK) receiverCall(r, -errno);
        break;
      }
      if (n == 0) break;
      for (int i = 0; i < n; i++) {
        struct msghdr* h = &r->messages[i].msg_hdr;
        r->lengths[i] = (h->msg_flags & MSG_TRUNC) ? -1 : (int32_t)r->messages[i].msg_len;
        uint32_t socklen = h->msg_namelen;
        memcpy(r->addresses + (size_t)i * ADDRESS_SLOT, &socklen, 4);
      }
      receiverCall(r, n);
      /* Fewer than asked: the socket was empty a moment ago; the next wake-up reads what comes. */
      if ((uint32_t)n < r->slots) break;
    }
  }
  napi_close_handle_scope(r->env, scope);
}

static napi_value StartReceiver(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 6) return throwType(env, "startReceiver() takes six arguments");
  int32_t fd = -1;
  if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0)
    return throwType(env, "startReceiver: fd must be a non-negative integer");
  uint8_t* data;
  int32_t* lengths;
  uint8_t* addresses;
  size_t dataLength, slots, addressesLength;
  if (!typedArray(env, argv[1], napi_uint8_array, (void**)&data, &dataLength))
    return throwType(env, "startReceiver: data must be a Uint8Array");
  uint32_t slotBytes = 0;
  if (napi_get_value_uint32(env, argv[2], &slotBytes) != napi_ok || slotBytes == 0)
    return throwType(env, "startReceiver: slotBytes must be a positive integer");
  if (!typedArray(env, argv[3], napi_int32_array, (void**)&lengths, &slots) || slots == 0 || slots > MAX_MESSAGES)
    return throwType(env, "startReceiver: lengths must be an Int32Array of 1 to 1024 slots");
  if (!typedArray(env, argv[4], napi_uint8_array, (void**)&addresses, &addressesLength) ||
      addressesLength < slots * ADDRESS_SLOT)
    return throwType(env, "startReceiver: addresses must be a Uint8Array of 32 bytes per slot");
  if (dataLength / slotBytes < slots) return throwType(env, "startReceiver: data must hold every slot");
  napi_valuetype type;
  if (napi_typeof(env, argv[5], &type) != napi_ok || type != napi_function)
    return throwType(env, "startReceiver: callback must be a function");

  uv_loop_t* loop = NULL;
  CHECK(napi_get_uv_event_loop(env, &loop));
  int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) {
    napi_throw_error(env, "ERR_UDP_BATCH_DUP", "startReceiver: cannot duplicate the socket descriptor");
    return NULL;
  }
  Receiver* r = calloc(1, sizeof(Receiver));
  struct mmsghdr* messages = calloc(slots, sizeof(struct mmsghdr));
  struct iovec* vectors = calloc(slots, sizeof(struct iovec));
  if (r == NULL || messages == NULL || vectors == NULL) {
    free(r);
    free(messages);
    free(vectors);
    close(dup);
    napi_throw_error(env, "ERR_UDP_BATCH_MEMORY", "udp_batch: out of memory");
    return NULL;
  }
  r->env = env;
  r->fd = dup;
  r->data = data;
  r->lengths = lengths;
  r->addresses = addresses;
  r->slots = (uint32_t)slots;
  r->slotBytes = slotBytes;
  r->messages = messages;
  r->vectors = vectors;
  for (uint32_t i = 0; i < r->slots; i++) {
    vectors[i].iov_base = data + (size_t)i * slotBytes;
    vectors[i].iov_len = slotBytes;
    struct msghdr* h = &messages[i].msg_hdr;
    h->msg_iov = &vectors[i];
    h->msg_iovlen = 1;
    h->msg_name = addresses + (size_t)i * ADDRESS_SLOT + 4;
    h->msg_namelen = ADDRESS_SLOT - 4;
  }
  napi_value name;
  int failed = napi_create_reference(env, argv[5], 1, &r->callback) != napi_ok ||
               napi_create_reference(env, argv[1], 1, &r->dataRef) != napi_ok ||
               napi_create_reference(env, argv[3], 1, &r->lengthsRef) != napi_ok ||
               napi_create_reference(env, argv[4], 1, &r->addressesRef) != napi_ok ||
               napi_create_string_utf8(env, "UdpBatchReceiver", NAPI_AUTO_LENGTH, &name) != napi_ok ||
               napi_async_init(env, NULL, name, &r->context) != napi_ok;
  if (failed || uv_poll_init(loop, &r->poll, dup) != 0) {
    /* References made so far are small leaks on a path that only fails when N-API does. */
    free(messages);
    free(vectors);
    free(r);
    close(dup);
    napi_throw_error(env, "ERR_UDP_BATCH_POLL", "startReceiver: cannot watch the socket");
    return NULL;
  }
  r->poll.data = r;
  if (uv_poll_start(&r->poll, UV_READABLE, receiverReadable) != 0) {
    receiverStop(r);
    napi_throw_error(env, "ERR_UDP_BATCH_POLL", "startReceiver: cannot watch the socket");
    return NULL;
  }
  CHECK(napi_add_env_cleanup_hook(env, receiverEnvCleanup, r));
  napi_value external;
  CHECK(napi_create_external(env, r, NULL, NULL, &external));
  return external;
}

static Receiver* receiverArg(napi_env env, napi_value value) {
  napi_valuetype type;
  if (napi_typeof(env, value, &type) != napi_ok || type != napi_external) return NULL;
  void* r = NULL;
  if (napi_get_value_external(env, value, &r) != napi_ok) return NULL;
  return (Receiver*)r;
}

static napi_value StopReceiver(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  Receiver* r = argc < 1 ? NULL : receiverArg(env, argv[0]);
  if (r == NULL) return throwType(env, "stopReceiver: expected a receiver from startReceiver");
  if (!r->stopped) {
    napi_remove_env_cleanup_hook(env, receiverEnvCleanup, r);
    receiverStop(r);
  }
  return NULL;
}

static napi_value FormatAddress(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  uint8_t* addresses;
  size_t length;
  uint32_t slot = 0;
  if (argc < 2 || !typedArray(env, argv[0], napi_uint8_array, (void**)&addresses, &length) ||
      napi_get_value_uint32(env, argv[1], &slot) != napi_ok || ((size_t)slot + 1) * ADDRESS_SLOT > length)
    return throwType(env, "formatAddress(addresses, slot) takes the addresses array and a slot in it");
  const uint8_t* at = addresses + (size_t)slot * ADDRESS_SLOT + 4;
  sa_family_t family;
  memcpy(&family, at, sizeof family);
  char text[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = "";
  if (family == AF_INET) {
    struct sockaddr_in a;
    memcpy(&a, at, sizeof a);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
  } else if (family == AF_INET6) {
    struct sockaddr_in6 a;
    memcpy(&a, at, sizeof a);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    if (a.sin6_scope_id != 0) {
      /* As Node prints a zone: the interface name, or its index when it has none. */
      char zone[IF_NAMESIZE + 1];
      size_t used = strlen(text);
      if (if_indextoname(a.sin6_scope_id, zone) != NULL)
        snprintf(text + used, sizeof text - used, "%%%s", zone);
      else
        snprintf(text + used, sizeof text - used, "%%%u", a.sin6_scope_id);
    }
  } else {
    return throwType(env, "formatAddress: the slot holds no IPv4 or IPv6 address");
  }
  napi_value result;
  CHECK(napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &result));
  return result;
}

static napi_value Init(napi_env env, napi_value exports) {
  Scratch* scratch = calloc(1, sizeof(Scratch));
  if (scratch == NULL) {
    napi_throw_error(env, "ERR_UDP_BATCH_MEMORY", "udp_batch: out of memory");
    return NULL;
  }
  if (napi_set_instance_data(env, scratch, freeScratch, NULL) != napi_ok) {
    free(scratch);
    napi_throw_error(env, "ERR_UDP_BATCH_NAPI", "udp_batch: napi_set_instance_data failed");
    return NULL;
  }
  napi_property_descriptor properties[] = {
      {"encodeAddress", NULL, EncodeAddress, NULL, NULL, NULL, napi_enumerable, NULL},
      {"send", NULL, Send, NULL, NULL, NULL, napi_enumerable, NULL},
      {"startReceiver", NULL, StartReceiver, NULL, NULL, NULL, napi_enumerable, NULL},
      {"stopReceiver", NULL, StopReceiver, NULL, NULL, NULL, napi_enumerable, NULL},
      {"formatAddress", NULL, FormatAddress, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  CHECK(napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties));
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
