/** `@svc/svcd`: the robot daemon. Today: the input probe behind `svcd probe-input`. */
export { type ProbeLine, type ProbeOptions, type ProbeSummary, probeInput } from './probe.js';
