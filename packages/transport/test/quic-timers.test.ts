import { FakeClock } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import { reportingLogger } from '../src/quic/report.js';
import { DeadlineTimer } from '../src/quic/timers.js';

describe('DeadlineTimer', () => {
  function timer(): { clock: FakeClock; fired: number[]; deadline: DeadlineTimer } {
    const clock = new FakeClock();
    const fired: number[] = [];
    return { clock, fired, deadline: new DeadlineTimer(clock, () => fired.push(clock.now())) };
  }

  it("fires at quiche's deadline, once", () => {
    const { clock, fired, deadline } = timer();
    deadline.arm(25);
    clock.advance(24);
    expect(fired).toEqual([]);
    clock.advance(100);
    expect(fired).toEqual([25]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('moves to an earlier deadline, and keeps a timer due no later than a new one (within 1 ms)', () => {
    const { clock, fired, deadline } = timer();
    deadline.arm(100);
    deadline.arm(40);
    expect(clock.pendingTimers).toBe(1);
    deadline.arm(500);
    deadline.arm(41);
    expect(clock.pendingTimers).toBe(1);
    clock.advance(1000);
    // Woken at 40: the owner finds quiche's deadline ahead and arms again.
    expect(fired).toEqual([40]);
  });

  it('is disarmed by a null deadline (quiche has no timer) and by cancel()', () => {
    const { clock, fired, deadline } = timer();
    deadline.arm(10);
    deadline.arm(null);
    expect(clock.pendingTimers).toBe(0);
    deadline.arm(10);
    deadline.cancel();
    clock.advance(100);
    expect(fired).toEqual([]);
    deadline.arm(5);
    clock.advance(5);
    expect(fired).toEqual([105]);
  });
});

describe('reportingLogger', () => {
  it('hands the errors logged at error and fatal to its sink, and drops the other levels', () => {
    const reported: unknown[] = [];
    const logger = reportingLogger((err) => reported.push(err));
    const bug = new Error('listener bug');
    logger.info({ err: bug }, 'not an error');
    logger.warn('not an error either');
    logger.error({ err: bug, event: 'datagram' }, 'a listener of datagram threw');
    logger.child({ component: 'x' }).fatal('no err field');
    expect(reported).toHaveLength(2);
    expect(reported[0]).toBe(bug);
    expect(reported[1]).toBeInstanceOf(Error);
    expect((reported[1] as Error).message).toBe('no err field');
  });
});
