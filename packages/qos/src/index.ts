/** `@svc/qos`: QoS profiles (the controllers arrive with the QoS issue). Pure, no I/O. */
export { PARITY_FLOOR, QOS_PROFILES, type QosProfile, type QosProfileName, qosProfile } from './profiles.js';
