/**
 * The allowed moves of a state machine whose state is a discriminated union: for each variant's
 * `kind`, the kinds it may move to. Written as one table per machine, so the life cycle reads in
 * one place and every object checks its moves the same way.
 */
export type TransitionTable<Kind extends string> = { readonly [From in Kind]: readonly Kind[] };

/**
 * Refuses a move the table does not allow, with a `TypeError` that names the machine and both
 * states (a move the life cycle does not have is a bug in the caller, never input from a peer).
 *
 * @throws {TypeError} when `table[from]` does not list `to`.
 */
export function assertTransition<Kind extends string>(
  machine: string,
  table: TransitionTable<Kind>,
  from: Kind,
  to: Kind,
): void {
  if (!table[from].includes(to)) {
    throw new TypeError(`${machine}: cannot move from ${from} to ${to}`);
  }
}
