/**
 * The shape every package's error class shares: a stable string `code` that callers branch on
 * (never the message), and the `cause` passed through.
 */
export class CodedError<Code extends string> extends Error {
  /** Stable across releases; the message may change. */
  readonly code: Code;

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/**
 * A type guard for one package's error class, optionally narrowed to one code:
 * `export const isWireError = codedErrorGuard(WireError)`, then `isWireError(err, 'short-datagram')`.
 */
export function codedErrorGuard<E extends CodedError<string>>(
  errorClass: abstract new (...args: never[]) => E,
): (err: unknown, code?: E['code']) => err is E {
  return (err: unknown, code?: E['code']): err is E =>
    err instanceof errorClass && (code === undefined || err.code === code);
}
