import { CodedError, codedErrorGuard } from '@svc/runtime';

/**
 * Stable codes of {@link ShaperError}. Callers branch on `code`, never on the message.
 *
 * - `invalid-options`: an option of {@link LinkShaper.start} or {@link LinkShaper.update} is out of
 *   range or of the wrong type; `issues` names each one.
 * - `bind-failed`: the listening address could not be bound (in use, not local, no permission).
 * - `send-failed`: the operating system refused to send a datagram (reported, never thrown).
 * - `socket-error`: a socket reported an error after start (reported, never thrown).
 * - `closed`: the shaper was used after {@link LinkShaper.close}.
 */
export type ShaperErrorCode = 'invalid-options' | 'bind-failed' | 'send-failed' | 'socket-error' | 'closed';

/** One bad option: where it is (dotted, e.g. `up.burstLoss.rate`) and what was wrong with it. */
export interface ShaperIssue {
  /** Dotted path of the option, e.g. `down.rateKbps`; empty for the options object itself. */
  readonly option: string;
  /** The value given, the rule it breaks and what to give instead. */
  readonly message: string;
}

/** The one error class of `@svc/shaper`. */
export class ShaperError extends CodedError<ShaperErrorCode> {
  override readonly name = 'ShaperError';
  /** Every bad option, for `invalid-options`; empty otherwise. */
  readonly issues: readonly ShaperIssue[];

  /**
   * @param code - What went wrong, for callers to branch on.
   * @param message - What went wrong, for people.
   * @param options - `cause`: the error this one wraps; `issues`: each bad option.
   */
  constructor(
    code: ShaperErrorCode,
    message: string,
    options?: { cause?: unknown; issues?: readonly ShaperIssue[] },
  ) {
    super(code, message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.issues = options?.issues ?? [];
  }
}

/** True when `err` is a {@link ShaperError}, optionally with the given code. */
export const isShaperError = codedErrorGuard(ShaperError);
