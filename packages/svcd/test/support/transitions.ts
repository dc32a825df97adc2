import { assertTransition, type TransitionTable } from '@svc/runtime';
import { expect } from 'vitest';

/**
 * Tries every move between two states of `table` as `machine` checks them: a move the table
 * lists passes, any other is refused with a `TypeError` that names the machine and both states.
 *
 * @returns How many moves were refused, for the caller to check against the life cycle's shape.
 */
export function expectOnlyListedMoves<Kind extends string>(
  machine: string,
  table: TransitionTable<Kind>,
): number {
  const kinds = Object.keys(table) as Kind[];
  let refused = 0;
  for (const from of kinds) {
    for (const to of kinds) {
      if (table[from].includes(to)) {
        expect(() => assertTransition(machine, table, from, to)).not.toThrow();
      } else {
        expect(() => assertTransition(machine, table, from, to)).toThrow(
          new TypeError(`${machine}: cannot move from ${from} to ${to}`),
        );
        refused++;
      }
    }
  }
  return refused;
}
