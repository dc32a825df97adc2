import { WireError } from './errors.js';
import { QOS_PROFILE_NAMES } from './qos-profile.js';
import { z } from './zod.js';

/**
 * Publisher-control datagrams: what the robot daemon tells the publisher (the robot-side code
 * that runs the encoder and the actuators) over UDP, one JSON object per datagram, best effort.
 * The contract is `docs/protocol/publisher-control.md` (specification section 6).
 */
const channelId = z.number().int().min(1).max(255);
const qosProfileName = z.enum(QOS_PROFILE_NAMES);
const nonNegativeInt = z.number().int().min(0).max(0x7fffffff);

/** Why a `video-config` was sent. */
export const VIDEO_CONFIG_REASONS = ['profile', 'pilot-request', 'abr-down', 'abr-up'] as const;
/** Rungs of the recovery ladder, in climbing order. */
export const RECOVERY_KINDS = ['ltr', 'intra_refresh', 'idr'] as const;

const videoConfig = z
  .object({
    type: z.literal('video-config'),
    channel: channelId,
    profile: qosProfileName,
    maxBitrateKbps: nonNegativeInt,
    latencyBudgetMs: nonNegativeInt,
    maxGopMs: nonNegativeInt,
    preferIntraRefresh: z.boolean(),
    suggestedFps: nonNegativeInt,
    reason: z.enum(VIDEO_CONFIG_REASONS),
  })
  .strict();

const recoveryRequest = z
  .object({
    type: z.literal('recovery-request'),
    channel: channelId,
    kind: z.enum(RECOVERY_KINDS),
    reason: z.string().max(256),
  })
  .strict();

const layer = z
  .object({
    type: z.literal('layer'),
    channel: channelId,
    layer: z.number().int().min(0).max(255),
    name: z.string().max(128),
    reason: z.enum(['up', 'down']),
  })
  .strict();

const session = z
  .object({
    type: z.literal('session'),
    state: z.enum(['started', 'ended', 'role']),
    session_id: z.string().min(1).max(128),
    role: z.enum(['driver', 'observer']),
    sessions: nonNegativeInt,
  })
  .strict();

/**
 * An extension (robot code may ignore it): the driver holds the slot but no command of theirs has
 * been written for `[agent] command_timeout_ms`; `idle_ms` is how long since their session began
 * or their last command, whichever came later. Sent once per silence.
 */
const driverIdle = z
  .object({
    type: z.literal('driver-idle'),
    session_id: z.string().min(1).max(128),
    idle_ms: nonNegativeInt,
  })
  .strict();

const publisherControlMessage = z.discriminatedUnion('type', [
  videoConfig,
  recoveryRequest,
  layer,
  session,
  driverIdle,
]);

/** Any publisher-control datagram. */
export type PublisherControlMessage = z.infer<typeof publisherControlMessage>;
/** `video-config`: the encoder settings the daemon asks for on one video channel. */
export type VideoConfigMessage = z.infer<typeof videoConfig>;
/** `recovery-request`: a pilot needs a recovery point on one video channel. */
export type RecoveryRequestMessage = z.infer<typeof recoveryRequest>;
/** `layer`: the relayed simulcast layer of a channel changed. */
export type LayerMessage = z.infer<typeof layer>;
/** `session`: a pilot session started or ended on the robot. */
export type SessionEventMessage = z.infer<typeof session>;
/** `driver-idle` (extension): the driver has sent no command for `command_timeout_ms`. */
export type DriverIdleMessage = z.infer<typeof driverIdle>;

/**
 * Largest publisher-control datagram accepted by {@link decodePublisherControl}; every message the
 * daemon sends is far smaller.
 */
export const MAX_PUBLISHER_CONTROL_BYTES = 8 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * One message as the bytes of one datagram: UTF-8 JSON, no newline. Throws `TypeError` for a
 * message that breaks the schema (a bug of the caller, never data from a peer).
 */
export function encodePublisherControl(message: PublisherControlMessage): Uint8Array {
  const checked = publisherControlMessage.safeParse(message);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new TypeError(
      `invalid publisher-control message "${message.type}" at ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return encoder.encode(JSON.stringify(checked.data));
}

/**
 * Parses one received datagram, for publishers written in TypeScript and for tests. Throws
 * {@link WireError} (`publisher-control`) naming what was wrong: too long, not UTF-8 JSON, or
 * outside the schema (unknown `type` included).
 */
export function decodePublisherControl(datagram: Uint8Array): PublisherControlMessage {
  if (datagram.byteLength > MAX_PUBLISHER_CONTROL_BYTES) {
    throw new WireError(
      'publisher-control',
      `publisher-control datagram of ${datagram.byteLength} bytes exceeds ${MAX_PUBLISHER_CONTROL_BYTES}`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(datagram));
  } catch (err) {
    throw new WireError('publisher-control', 'publisher-control datagram is not UTF-8 JSON', { cause: err });
  }
  const checked = publisherControlMessage.safeParse(value);
  if (checked.success) return checked.data;
  const issue = checked.error.issues[0];
  const type =
    typeof value === 'object' && value !== null ? String((value as { type?: unknown }).type) : typeof value;
  throw new WireError(
    'publisher-control',
    `publisher-control message "${type}" rejected at ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
  );
}
