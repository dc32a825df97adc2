/**
 * The QoS profile names of the specification, from the lowest latency to the best picture. The
 * control messages (`welcome`, `qos`, `set-qos`) and publisher control's `video-config` carry
 * them, so the wire layer declares them; each profile's numbers are `@svc/qos`'s `QOS_PROFILES`.
 */
export const QOS_PROFILE_NAMES = ['latency', 'balanced', 'quality'] as const;

/** One of {@link QOS_PROFILE_NAMES}. */
export type QosProfileName = (typeof QOS_PROFILE_NAMES)[number];
