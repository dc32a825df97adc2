import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of {@link DemoError}:
 * - `bad-clip`: the bundled H.264 clip cannot be looped (no parameter sets, no IDR first, empty);
 * - `no-enrolment`: the demo robot has no enrolment record and svc-cloud wrote it no token;
 * - `bad-address`: the cloud address given to the launcher is not an http:// URL.
 */
export type DemoErrorCode = 'bad-clip' | 'no-enrolment' | 'bad-address';

/** The demonstration robot cannot start; the message says why and what to do. */
export class DemoError extends CodedError<DemoErrorCode> {
  override readonly name = 'DemoError';
}

/** True when `err` is a {@link DemoError}, optionally with the given code. */
export const isDemoError = codedErrorGuard(DemoError);
