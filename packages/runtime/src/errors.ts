/**
 * The shape every package's error class shares: a stable string `code` that callers branch on
 * (never the message), and the `cause` passed through. `name` is the subclass's own name
 * (`WireError`), which a subclass may also set itself (a minifier renames classes).
 */
export class CodedError<Code extends string> extends Error {
  /** Stable across releases; the message may change. */
  readonly code: Code;

  /**
   * @param code - What went wrong, for callers to branch on.
   * @param message - What went wrong, for people; never branched on.
   * @param options - `cause`: the error this one wraps.
   */
  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
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
