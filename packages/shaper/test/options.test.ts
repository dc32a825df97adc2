import { describe, expect, it } from 'vitest';
import { isShaperError, type ShaperError } from '../src/errors.js';
import {
  IMPAIRMENT_DEFAULTS,
  type LinkShaperOptions,
  resolveShaperOptions,
  resolveUpdate,
} from '../src/options.js';

const base = { listen: { address: '127.0.0.1', port: 0 }, target: { address: '127.0.0.1', port: 4433 } };

function rejection(options: unknown): ShaperError {
  try {
    resolveShaperOptions(options as LinkShaperOptions);
  } catch (err) {
    if (isShaperError(err, 'invalid-options')) return err;
    throw err;
  }
  throw new Error('expected the options to be rejected');
}

describe('shaper options', () => {
  it('applies the defaults in one place: a clean link both ways, seed 1', () => {
    const resolved = resolveShaperOptions(base);
    expect(resolved.up).toEqual(IMPAIRMENT_DEFAULTS);
    expect(resolved.down).toEqual(IMPAIRMENT_DEFAULTS);
    expect(resolved).toMatchObject({ seed: 1, idleTimeoutMs: 60_000, maxClients: 256 });
    expect(Object.isFrozen(resolved) && Object.isFrozen(resolved.up)).toBe(true);
  });

  it('names the option, the value and what was expected', () => {
    const err = rejection({ ...base, up: { loss: 1.5 }, down: { rateKbps: -1 } });
    expect(err.issues).toEqual([
      { option: 'up.loss', message: 'got 1.5, expected a probability from 0 to 1 (0.05 is 5 %)' },
      {
        option: 'down.rateKbps',
        message: 'got -1, expected a rate in kbit/s from 0 (unlimited) to 100000000',
      },
    ]);
    expect(err.message).toContain('up.loss: got 1.5');
  });

  it('refuses a burst rate the mean burst length cannot give, and says the limit', () => {
    const err = rejection({ ...base, down: { burstLoss: { rate: 0.6, meanBurst: 1 } } });
    expect(err.issues[0]?.option).toBe('down.burstLoss.rate');
    expect(err.issues[0]?.message).toMatch(/got 0\.6, expected at most .* = 0\.5 with meanBurst 1/);
  });

  it('refuses unknown options, listing the known ones', () => {
    const err = rejection({ ...base, up: { lossRate: 0.1 } });
    expect(err.issues[0]?.option).toBe('up');
    expect(err.issues[0]?.message).toMatch(
      /unknown option "lossRate"; known options are rateKbps, queueBytes/,
    );
  });

  it('refuses host names, a missing target and a fractional seed', () => {
    const err = rejection({ listen: { address: 'localhost', port: 0 }, seed: 1.5 });
    const options = err.issues.map((i) => i.option);
    expect(options).toEqual(expect.arrayContaining(['listen.address', 'target', 'seed']));
    expect(err.issues.find((i) => i.option === 'target')?.message).toMatch(/^got nothing/);
  });

  it('an update keeps the fields not given and changes nothing when invalid', () => {
    const current = resolveShaperOptions({ ...base, up: { rateKbps: 2000, delayMs: 40 } });
    const next = resolveUpdate(current, { up: { rateKbps: 1000 } });
    expect(next.up).toMatchObject({ rateKbps: 1000, delayMs: 40 });
    expect(next.down).toEqual(current.down);
    expect(() => resolveUpdate(current, { up: { delayMs: Number.NaN } })).toThrow(/up\.delayMs: got NaN/);
    expect(() => resolveUpdate(current, { sideways: {} } as never)).toThrow(/known options are up, down/);
  });
});
