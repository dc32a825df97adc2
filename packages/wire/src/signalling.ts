import { WireError } from './errors.js';
import { RELAY_REFUSALS } from './relay.js';
import { z } from './zod.js';

/**
 * Signalling protocol v2: JSON text messages on the WebSocket `/ws` of svc-cloud, one object per
 * message, each with a `type`. Robots prove their Ed25519 key, announce how to reach them and
 * hear about sessions; pilots present a pilot session token and ask for an offer. The contract is
 * `docs/protocol/signalling.md`.
 */

/** The WebSocket subprotocol both sides name (`Sec-WebSocket-Protocol`). */
export const SIGNAL_SUBPROTOCOL = 'svc-signal.v2';

/** Largest message either side accepts, bytes. A larger one closes the connection (1009). */
export const MAX_SIGNAL_MESSAGE_BYTES = 64 * 1024;

/** Close codes of the signalling WebSocket beyond the standard ones. */
export const SIGNAL_CLOSE = {
  /** A message that is not JSON, breaks the schema, or comes out of order before `auth-ok`. */
  protocolError: 4400,
  /** The robot's signature or the pilot's token did not verify. */
  unauthenticated: 4401,
  /** `denied` was sent: `unknown-robot`, `key-mismatch`, or the robot was deleted. */
  denied: 4403,
  /** No `auth` in time after the challenge, or nothing heard for three heartbeat periods. */
  timeout: 4408,
  /** The same robot connected again; the newer connection wins. */
  replaced: 4409,
  /** Too many messages for too long. */
  rateLimited: 4429,
} as const;

/** Why a robot or pilot was refused. */
export const DENIAL_REASONS = [
  'unknown-robot',
  'key-mismatch',
  'bad-signature',
  'bad-token',
  'forbidden',
  'robot-deleted',
] as const;
/** One of {@link DENIAL_REASONS}. */
export type DenialReason = (typeof DENIAL_REASONS)[number];

const b64url = (min: number, max: number) =>
  z
    .string()
    .min(min)
    .max(max)
    .regex(/^[A-Za-z0-9_-]*$/, { error: 'base64url without padding' });
/**
 * A robot id: 1 to 128 letters, digits, `.`, `_` or `-`, starting with a letter or digit. The one
 * rule for the daemon's `robot_id`, enrolment and signalling.
 */
export const ROBOT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const robotId = z.string().regex(ROBOT_ID_PATTERN, { error: 'a robot id (letters, digits, ".", "_", "-")' });
const sessionId = z.string().min(1).max(128);
const role = z.enum(['driver', 'observer']);
const scope = z.enum(['drive', 'observe']);

const candidate = z
  .object({
    /** An IPv4 or IPv6 address literal. */
    address: z.string().min(2).max(64),
    port: z.number().int().min(1).max(65535),
    family: z.enum(['ipv4', 'ipv6']),
    /** `host`: an address of the robot itself; `mapped`: an external address from port mapping. */
    kind: z.enum(['host', 'mapped']),
  })
  .strict();
/** How a pilot may reach a robot's QUIC port. */
export type SignalCandidate = z.infer<typeof candidate>;

const channel = z
  .object({
    id: z.number().int().min(1).max(255),
    name: z.string().min(1).max(128),
    kind: z.enum(['video', 'sensor', 'command']),
    codec: z.string().min(1).max(128),
  })
  .strict();
/** A channel as the robot announces it. */
export type SignalChannel = z.infer<typeof channel>;

const certHash = z.string().regex(/^[0-9a-f]{64}$/, { error: 'a SHA-256 hash in lowercase hex' });

const requestId = z.string().min(1).max(128);

/** How a session's packets travel: straight between pilot and robot, or through svc-cloud's relay. */
const sessionPath = z.enum(['direct', 'relay']);

/** The transports a robot serves sessions on (`docs/protocol/webrtc.md`). */
export const SESSION_BACKENDS = ['quic', 'webrtc'] as const;
/** A transport a robot serves sessions on. */
export type SessionBackend = (typeof SESSION_BACKENDS)[number];
const backends = z.array(z.enum(SESSION_BACKENDS)).min(1).max(SESSION_BACKENDS.length);
/** An SDP offer or answer of a WebRTC session (data channels only: a few kilobytes). */
const sdp = z
  .string()
  .min(1)
  .max(16 * 1024);
/** One trickled ICE candidate, as `RTCIceCandidate` gives it (`candidate`, `sdpMid`). */
const rtcCandidate = {
  candidate: z.string().min(1).max(1024),
  mid: z.string().max(64),
};
/** A STUN or TURN server for a WebRTC session: `RTCIceServer`'s shape, one URL each. */
const iceServer = z
  .object({
    url: z
      .string()
      .regex(/^(stuns?|turns?):[^\s]{1,250}$/, { error: 'a stun:, stuns:, turn: or turns: URL' }),
    username: z.string().max(256).optional(),
    credential: z.string().max(256).optional(),
  })
  .strict();
/** Why svc-cloud or the robot gave up on a WebRTC session. */
export const RTC_REFUSALS = ['not-allowed', 'robot-failed', 'gone'] as const;
/** How a session's packets travel (`direct` or `relay`). */
export type SessionPath = z.infer<typeof sessionPath>;

/** An address a relay socket is reached at: an IP address literal or a DNS name. */
const relayHost = z.string().min(1).max(253);
/** A relay token (opaque to its holder). */
const relayToken = z
  .string()
  .min(1)
  .max(1024)
  .regex(/^[\x21-\x7e]+$/, { error: 'printable ASCII' });

/**
 * Why svc-cloud refused a relay allocation (`relay-refused`): the codes of the relay's own attach
 * refusals, plus `not-allowed` (the robot or the service does not allow relaying, or the session
 * is not this connection's) and `unavailable` (no relay port could be opened now).
 */
export const RELAY_ALLOCATION_REFUSALS = [...RELAY_REFUSALS, 'not-allowed', 'unavailable'] as const;
/** One of {@link RELAY_ALLOCATION_REFUSALS}. */
export type RelayAllocationRefusal = (typeof RELAY_ALLOCATION_REFUSALS)[number];

/** Who a session is for, as other pilots see them: the token's `sub` and a display name, when known. */
const person = z
  .object({
    /** The token's `sub`: `user:<id>`, `key:<id>` or `anonymous`. */
    id: z.string().max(256),
    /** The user's name, or the API key's `subject`; `null` when there is none. */
    name: z.string().max(256).nullable(),
  })
  .strict();
/** A person in `driver`, `control-request` and `control-pending`. */
export type SignalPerson = z.infer<typeof person>;

/**
 * How a control request (`request-control`, `take-control`) ended, in `control-result`:
 *
 * - `granted`: the requester drives now (the driver said yes, released the slot, or it was free);
 * - `refused`: the driver said no;
 * - `timeout`: the driver did not answer in time;
 * - `cancelled`: the request ended unanswered (a side left, the driver changed, the robot lost the
 *   cloud);
 * - `taken`: an admin took the slot over (to the taker, to the driver who lost it, and to the
 *   requester of a request the takeover ended);
 * - `denied`: the server would not pass the request on (the reason is in `message`).
 */
export const CONTROL_OUTCOMES = ['granted', 'refused', 'timeout', 'cancelled', 'taken', 'denied'] as const;
/** One of {@link CONTROL_OUTCOMES}. */
export type ControlOutcome = (typeof CONTROL_OUTCOMES)[number];

const openSession = z.object({ session_id: sessionId, role, sub: z.string().max(256) }).strict();

const robotAuth = z
  .object({
    type: z.literal('auth'),
    v: z.literal(2),
    robot_id: robotId,
    public_key: b64url(43, 43),
    sig: b64url(86, 86),
  })
  .strict();
const pilotAuth = z
  .object({ type: z.literal('auth'), v: z.literal(2), token: z.string().min(1).max(8192) })
  .strict();

/** Messages a robot or pilot sends, besides `auth`. */
const clientOthers = [
  z
    .object({
      type: z.literal('announce'),
      candidates: z.array(candidate).max(16),
      cert_hashes: z.array(certHash).min(1).max(4),
      channels: z.array(channel).max(255),
      max_sessions: z.number().int().min(1).max(64),
      relay: z.boolean(),
      /** Sessions open on the robot now (after a reconnect, those it kept). */
      sessions: z.array(openSession).max(64),
      /**
       * `[agent] driver_grace_ms`: how long the robot keeps the driver slot for the same user after
       * the driver's session ends (absent: 0, from robots before it).
       */
      driver_grace_ms: z.number().int().min(0).max(600_000).optional(),
      /** The transports the robot serves sessions on (absent, from robots before WebRTC: `quic`). */
      backends: backends.optional(),
    })
    .strict(),
  z.object({ type: z.literal('heartbeat'), t: z.number().optional() }).strict(),
  z
    .object({
      type: z.literal('session-started'),
      session_id: sessionId,
      role,
      sub: z.string().max(256),
      /** How the session's packets travel (absent from robots before the relay: `direct`). */
      path: sessionPath.optional(),
      /** What carries them (absent from robots before WebRTC: `quic`). */
      backend: z.enum(SESSION_BACKENDS).optional(),
    })
    .strict(),
  /** A session's packets now travel another way (the pilot moved from the relay to a direct path). */
  z.object({ type: z.literal('session-path'), session_id: sessionId, path: sessionPath }).strict(),
  z.object({ type: z.literal('session-ended'), session_id: sessionId }).strict(),
  z.object({ type: z.literal('connect'), robot_id: robotId }).strict(),
  z.object({ type: z.literal('leave'), session_id: sessionId }).strict(),
  /** An observer session of a `drive` token asks the driver for the slot. */
  z.object({ type: z.literal('request-control'), session_id: sessionId }).strict(),
  /** The driver's answer to a `control-request`. */
  z.object({ type: z.literal('answer-control'), request_id: requestId, grant: z.boolean() }).strict(),
  /** An org admin or owner with a `drive` token takes the slot at once. */
  z.object({ type: z.literal('take-control'), session_id: sessionId }).strict(),
  /** The driver gives the slot up. */
  z.object({ type: z.literal('release-control'), session_id: sessionId }).strict(),
  /**
   * A pilot whose signalling connection dropped and came back links its session (offered to the
   * same token) to the new connection, to hear the driver news again and ask for the slot.
   */
  z.object({ type: z.literal('resume'), session_id: sessionId }).strict(),
  /**
   * A pilot asks for its relay port for a session: `token` is the offer's `relay_grant.token`,
   * good for this one session, this one party, once.
   */
  z.object({ type: z.literal('relay-allocate'), session_id: sessionId, token: relayToken }).strict(),
  /**
   * A pilot renews a session before its token expires: `token` is a fresh pilot session token for
   * the same robot and person. The relay allocation (if any) lives on until the new expiry.
   */
  z.object({ type: z.literal('renew'), session_id: sessionId, token: z.string().min(1).max(8192) }).strict(),
  /** A pilot's SDP offer for one of its sessions, to run it on WebRTC (`docs/protocol/webrtc.md`). */
  z.object({ type: z.literal('rtc-offer'), session_id: sessionId, sdp }).strict(),
  /** The robot's SDP answer; svc-cloud passes it to the session's pilot. */
  z.object({ type: z.literal('rtc-answer'), session_id: sessionId, sdp }).strict(),
  /** A local ICE candidate of either side, for the other (svc-cloud passes it on). */
  z.object({ type: z.literal('rtc-candidate'), session_id: sessionId, ...rtcCandidate }).strict(),
  /** The robot cannot serve the pilot's offer (it has no WebRTC, or the offer is unusable). */
  z.object({ type: z.literal('rtc-failed'), session_id: sessionId, message: z.string().max(512) }).strict(),
] as const;

/** Messages a robot or pilot sends. */
const clientMessages = z.union([robotAuth, pilotAuth, ...clientOthers]);

/**
 * The one schema a client message can match, chosen by its `type` (and, for `auth`, by whether it
 * names a robot), so a message is checked once instead of against every branch of the union.
 */
const clientSchemaByType = new Map<string, z.ZodType<SignalClientMessage>>(
  clientOthers.map((schema) => [schema.shape.type.value, schema]),
);

function clientSchemaFor(value: unknown): z.ZodType<SignalClientMessage> {
  if (typeof value !== 'object' || value === null) return clientMessages;
  const type = (value as { type?: unknown }).type;
  if (type === 'auth') return 'robot_id' in value ? robotAuth : pilotAuth;
  return (typeof type === 'string' && clientSchemaByType.get(type)) || clientMessages;
}

/** Messages svc-cloud sends. */
const serverMessages = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('challenge'),
      v: z.literal(2),
      nonce: b64url(43, 43),
    })
    .strict(),
  z
    .object({
      type: z.literal('auth-ok'),
      role: z.enum(['robot', 'pilot']),
      /** The robot's own id, or the robot a pilot's token is for. */
      robot_id: robotId,
      /** Robots: the org the robot is enrolled in, `null` when admitted by open dev enrolment. */
      org_id: z.string().max(64).nullable().optional(),
      /** Pilots: the token's scope. */
      scope: scope.optional(),
      heartbeat_ms: z.number().int().min(1000).max(120_000),
    })
    .strict(),
  z
    .object({
      type: z.literal('denied'),
      reason: z.enum(DENIAL_REASONS),
      message: z.string().max(512),
      robot_id: robotId.optional(),
    })
    .strict(),
  z.object({ type: z.literal('heartbeat-ack'), t: z.number().optional() }).strict(),
  z
    .object({
      type: z.literal('session-open'),
      session_id: sessionId,
      role,
      sub: z.string().max(256),
      scope,
      jti: z.string().max(128),
      exp: z.number().int(),
    })
    .strict(),
  z
    .object({
      type: z.literal('session-revoked'),
      session_id: sessionId,
      jti: z.string().max(128).optional(),
      reason: z.string().max(256),
    })
    .strict(),
  z
    .object({
      type: z.literal('offer'),
      session_id: sessionId,
      robot_id: robotId,
      role,
      candidates: z.array(candidate).max(16),
      cert_hashes: z.array(certHash).min(1).max(4),
      channels: z.array(channel).max(255),
      relay: z.boolean(),
      /**
       * Present when `relay` is true: where this session's relay lives (the node it is pinned to)
       * and the pilot's token for `relay-allocate`.
       */
      relay_grant: z
        .object({ host: relayHost, token: relayToken, expires_in_ms: z.number().int().min(0) })
        .strict()
        .optional(),
      /** The transports the robot serves sessions on (absent: `quic` only). */
      backends: backends.optional(),
      /** STUN and TURN servers for a WebRTC session, TURN with credentials for this session only. */
      ice_servers: z.array(iceServer).max(8).optional(),
    })
    .strict(),
  /**
   * To the robot: a pilot's offer to run `session_id` on WebRTC, with the STUN and TURN servers
   * the robot's side uses (TURN credentials for this session only).
   */
  z
    .object({
      type: z.literal('rtc-session'),
      session_id: sessionId,
      sdp,
      ice_servers: z.array(iceServer).max(8),
    })
    .strict(),
  /** To the pilot: the robot's SDP answer. */
  z.object({ type: z.literal('rtc-answer'), session_id: sessionId, sdp }).strict(),
  /** To either side: the other's ICE candidate. */
  z.object({ type: z.literal('rtc-candidate'), session_id: sessionId, ...rtcCandidate }).strict(),
  /** To the pilot: the WebRTC session cannot be set up; `message` says why. */
  z
    .object({
      type: z.literal('rtc-refused'),
      session_id: sessionId,
      code: z.enum(RTC_REFUSALS),
      message: z.string().max(512),
    })
    .strict(),
  /** The pilot's relay port for a session: WebTransport to `https://<host>:<port>/` pinning the robot's hashes. */
  z
    .object({
      type: z.literal('relay-allocated'),
      session_id: sessionId,
      host: relayHost,
      port: z.number().int().min(1).max(65535),
      expires_in_ms: z.number().int().min(0),
    })
    .strict(),
  z
    .object({
      type: z.literal('relay-refused'),
      session_id: sessionId,
      code: z.enum(RELAY_ALLOCATION_REFUSALS),
      message: z.string().max(512),
    })
    .strict(),
  /**
   * To the robot: a pilot is coming through the relay for `session_id`; attach from the QUIC port
   * to `host:port` with `token` (`docs/protocol/relay.md`).
   */
  z
    .object({
      type: z.literal('relay-open'),
      session_id: sessionId,
      host: relayHost,
      port: z.number().int().min(1).max(65535),
      token: relayToken,
    })
    .strict(),
  /** A `renew` was accepted: the session (and its relay allocation) lives until `exp` (seconds since the epoch). */
  z.object({ type: z.literal('renewed'), session_id: sessionId, exp: z.number().int() }).strict(),
  /** A `renew` was refused: the session ends when its current token expires. */
  z
    .object({ type: z.literal('renew-refused'), session_id: sessionId, message: z.string().max(512) })
    .strict(),
  /**
   * To the pilots of a robot's sessions: the robot announced other addresses or certificates (a
   * port was mapped, a lease changed, the certificate rotated). A session on the relay tries the
   * new direct candidates.
   */
  z
    .object({
      type: z.literal('candidates'),
      robot_id: robotId,
      candidates: z.array(candidate).max(16),
      cert_hashes: z.array(certHash).min(1).max(4),
    })
    .strict(),
  z.object({ type: z.literal('robot-offline'), robot_id: robotId }).strict(),
  z
    .object({
      type: z.literal('driver'),
      robot_id: robotId,
      /** The session holding the driver slot, `null` when it is free. */
      session_id: sessionId.nullable(),
      user: person.nullable(),
    })
    .strict(),
  z
    .object({
      type: z.literal('control-request'),
      request_id: requestId,
      /** The driver's session, whose slot is asked for. */
      session_id: sessionId,
      /** Who asks. */
      user: person,
      expires_in_ms: z.number().int().min(0),
    })
    .strict(),
  z
    .object({
      type: z.literal('control-pending'),
      request_id: requestId,
      /** The requester's session. */
      session_id: sessionId,
      /** Who is asked (the driver). */
      driver: person,
      expires_in_ms: z.number().int().min(0),
    })
    .strict(),
  z
    .object({
      type: z.literal('control-result'),
      request_id: requestId,
      /** The session of the one told: the requester's, the taker's, or the driver's. */
      session_id: sessionId,
      outcome: z.enum(CONTROL_OUTCOMES),
      message: z.string().max(512),
    })
    .strict(),
  z.object({ type: z.literal('session-role'), session_id: sessionId, role }).strict(),
  z
    .object({
      type: z.literal('error'),
      code: z.enum(['bad-message', 'rate-limited', 'not-allowed']),
      message: z.string().max(512),
    })
    .strict(),
]);

/** An `offer`. */
export type SignalOffer = Extract<SignalServerMessage, { type: 'offer' }>;

/** A message a robot or pilot sends. */
export type SignalClientMessage = z.infer<typeof clientMessages>;
/** A message svc-cloud sends. */
export type SignalServerMessage = z.infer<typeof serverMessages>;
/** A robot's `auth`. */
export type RobotAuthMessage = z.infer<typeof robotAuth>;
/** A pilot's `auth`. */
export type PilotAuthMessage = z.infer<typeof pilotAuth>;

/** Whether an `auth` message is a robot's (it carries `robot_id`) rather than a pilot's. */
export function isRobotAuth(message: RobotAuthMessage | PilotAuthMessage): message is RobotAuthMessage {
  return 'robot_id' in message;
}

const encoder = new TextEncoder();

/**
 * The bytes a robot signs with its Ed25519 key to answer a challenge: the UTF-8 text
 * `svc-signal-v2:<nonce>:<robot_id>`. The prefix keeps the signature from meaning anything in
 * another protocol; the robot id binds it to the identity claimed.
 */
export function robotChallengePayload(nonce: string, robotIdValue: string): Uint8Array {
  return encoder.encode(`svc-signal-v2:${nonce}:${robotIdValue}`);
}

/** A message as the JSON text of one WebSocket message. Throws `TypeError` when it breaks the schema. */
export function encodeSignalMessage(message: SignalClientMessage | SignalServerMessage): string {
  const schema: z.ZodType = isServerType(message.type) ? serverMessages : clientSchemaFor(message);
  const checked = schema.safeParse(message);
  if (!checked.success) {
    throw new TypeError(`invalid signalling message "${message.type}": ${describe(checked.error)}`);
  }
  return JSON.stringify(message);
}

/** Parses a message from a robot or pilot; bad input is a {@link WireError} `signal-message`, returned. */
export function parseSignalClientMessage(text: string): SignalClientMessage | WireError {
  return parse(clientSchemaFor, text);
}

/** Parses a message from svc-cloud; bad input is a {@link WireError} `signal-message`, returned. */
export function parseSignalServerMessage(text: string): SignalServerMessage | WireError {
  return parse(() => serverMessages, text);
}

const SERVER_TYPES = new Set([
  'challenge',
  'auth-ok',
  'denied',
  'heartbeat-ack',
  'session-open',
  'session-revoked',
  'offer',
  'relay-allocated',
  'relay-refused',
  'relay-open',
  'rtc-session',
  'rtc-answer',
  'rtc-candidate',
  'rtc-refused',
  'renewed',
  'renew-refused',
  'candidates',
  'robot-offline',
  'driver',
  'control-request',
  'control-pending',
  'control-result',
  'session-role',
  'error',
]);

function isServerType(type: string): boolean {
  return SERVER_TYPES.has(type);
}

function parse<T>(schemaFor: (value: unknown) => z.ZodType<T>, text: string): T | WireError {
  if (text.length > MAX_SIGNAL_MESSAGE_BYTES) {
    return new WireError('signal-message', `message longer than ${MAX_SIGNAL_MESSAGE_BYTES} bytes`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return new WireError('signal-message', 'message is not JSON');
  }
  const checked = schemaFor(value).safeParse(value);
  if (checked.success) return checked.data;
  const type =
    typeof value === 'object' && value !== null ? String((value as { type?: unknown }).type) : typeof value;
  return new WireError('signal-message', `message "${type}" rejected: ${describe(checked.error)}`);
}

function describe(error: z.ZodError): string {
  // A union reports one issue per branch; the deepest path names the field that is wrong.
  const issues = error.issues.flatMap((issue) =>
    issue.code === 'invalid_union' ? issue.errors.flat() : [issue],
  );
  const issue = issues.sort((a, b) => b.path.length - a.path.length)[0];
  return `${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`;
}
