import { describe, expect, it } from 'vitest';
import { assertTransition, type TransitionTable } from '../src/index.js';

type Kind = 'idle' | 'open' | 'closed';
const table: TransitionTable<Kind> = { idle: ['open', 'closed'], open: ['closed'], closed: [] };

describe('assertTransition', () => {
  it('allows every move the table lists', () => {
    expect(() => assertTransition('door', table, 'idle', 'open')).not.toThrow();
    expect(() => assertTransition('door', table, 'open', 'closed')).not.toThrow();
  });

  it('refuses a move the table does not list, naming the machine and both states', () => {
    expect(() => assertTransition('door', table, 'closed', 'open')).toThrow(
      new TypeError('door: cannot move from closed to open'),
    );
    expect(() => assertTransition('door', table, 'open', 'idle')).toThrow(TypeError);
  });
});
