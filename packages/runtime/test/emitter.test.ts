import { describe, expect, it } from 'vitest';
import { safeCall, TypedEmitter } from '../src/index.js';
import { memoryLogger } from '../src/testing/index.js';

interface Events {
  frame: (id: number, label: string) => void;
  closed: () => void;
}

describe('TypedEmitter.safeEmit', () => {
  it('calls every listener in order with the arguments', () => {
    const emitter = new TypedEmitter<Events>();
    const seen: string[] = [];
    emitter.on('frame', (id, label) => seen.push(`a ${id} ${label}`));
    emitter.on('frame', (id, label) => seen.push(`b ${id} ${label}`));
    emitter.on('closed', () => seen.push('closed'));
    emitter.safeEmit('frame', 7, 'key');
    expect(seen).toEqual(['a 7 key', 'b 7 key']);
  });

  it('does not throw when a listener throws, runs the others, and logs the error with the event name', () => {
    const logger = memoryLogger();
    const emitter = new TypedEmitter<Events>(logger);
    const seen: string[] = [];
    emitter.on('frame', () => seen.push('before'));
    emitter.on('frame', () => {
      throw new Error('listener bug');
    });
    emitter.on('frame', (id) => seen.push(`after ${id}`));

    expect(() => emitter.safeEmit('frame', 1, 'x')).not.toThrow();
    expect(seen).toEqual(['before', 'after 1']);
    expect(logger.records).toHaveLength(1);
    const [record] = logger.records;
    expect(record).toMatchObject({
      level: 'error',
      fields: { event: 'frame', err: { name: 'Error', message: 'listener bug' } },
    });
    expect(record!.message).toContain('frame');

    // The next emit reaches every listener again.
    emitter.safeEmit('frame', 2, 'y');
    expect(seen).toEqual(['before', 'after 1', 'before', 'after 2']);
    expect(logger.records).toHaveLength(2);
  });

  it('logs a thrown non-Error value, and a secret in a listener error redacted', () => {
    const logger = memoryLogger();
    const emitter = new TypedEmitter<Events>(logger);
    emitter.on('closed', () => {
      throw 'plain string';
    });
    emitter.on('closed', () => {
      throw new Error('could not reach rtsp://admin:hunter2@cam/live');
    });
    emitter.safeEmit('closed');
    expect(logger.records.map((record) => record.fields.err)).toEqual([
      'plain string',
      expect.objectContaining({ message: 'could not reach rtsp://***@cam/live' }),
    ]);
    expect(JSON.stringify(logger.records)).not.toContain('hunter2');
  });

  it('without a logger, swallows a listener error silently and carries on', () => {
    const emitter = new TypedEmitter<Events>();
    let after = 0;
    emitter.on('closed', () => {
      throw new Error('bug');
    });
    emitter.on('closed', () => {
      after += 1;
    });
    expect(() => emitter.safeEmit('closed')).not.toThrow();
    expect(after).toBe(1);
  });

  it('does nothing for an event without listeners', () => {
    const logger = memoryLogger();
    expect(() => new TypedEmitter<Events>(logger).safeEmit('closed')).not.toThrow();
    expect(logger.records).toEqual([]);
  });
});

describe('TypedEmitter listeners', () => {
  it('on returns a remover; off removes; unknown listeners and repeated removes are ignored', () => {
    const emitter = new TypedEmitter<Events>();
    let a = 0;
    let b = 0;
    const listenerB = () => {
      b += 1;
    };
    const removeA = emitter.on('closed', () => {
      a += 1;
    });
    emitter.on('closed', listenerB);
    emitter.safeEmit('closed');
    removeA();
    removeA();
    emitter.safeEmit('closed');
    emitter.off('closed', listenerB);
    emitter.off('closed', listenerB);
    emitter.off('closed', () => {});
    emitter.off('frame', () => {});
    emitter.safeEmit('closed');
    expect([a, b]).toEqual([1, 2]);
    expect(emitter.listenerCount('closed')).toBe(0);
  });

  it('adding the same listener twice calls it twice; off removes one of them', () => {
    const emitter = new TypedEmitter<Events>();
    let calls = 0;
    const listener = () => {
      calls += 1;
    };
    emitter.on('closed', listener);
    emitter.on('closed', listener);
    emitter.safeEmit('closed');
    expect(calls).toBe(2);
    emitter.off('closed', listener);
    emitter.safeEmit('closed');
    expect(calls).toBe(3);
    expect(emitter.listenerCount('closed')).toBe(1);
  });

  it('once calls a listener at most once, even when it emits again from inside', () => {
    const emitter = new TypedEmitter<Events>();
    const ids: number[] = [];
    emitter.once('frame', (id) => {
      ids.push(id);
      emitter.safeEmit('frame', id + 100, 'nested');
    });
    expect(emitter.listenerCount('frame')).toBe(1);
    emitter.safeEmit('frame', 1, 'x');
    emitter.safeEmit('frame', 2, 'x');
    expect(ids).toEqual([1]);
    expect(emitter.listenerCount('frame')).toBe(0);
  });

  it('once returns a remover that works before the event', () => {
    const emitter = new TypedEmitter<Events>();
    let calls = 0;
    const remove = emitter.once('closed', () => {
      calls += 1;
    });
    remove();
    emitter.safeEmit('closed');
    expect(calls).toBe(0);
  });

  it('applies listeners added or removed during an emit from the next emit on', () => {
    const emitter = new TypedEmitter<Events>();
    const seen: string[] = [];
    const late = () => seen.push('late');
    const removed = () => seen.push('removed');
    emitter.on('closed', () => {
      seen.push('first');
      if (emitter.listenerCount('closed') === 2) {
        emitter.on('closed', late);
        emitter.off('closed', removed);
      }
    });
    emitter.on('closed', removed);

    emitter.safeEmit('closed');
    expect(seen).toEqual(['first', 'removed']);
    emitter.safeEmit('closed');
    expect(seen).toEqual(['first', 'removed', 'first', 'late']);
  });

  it('counts listeners per event, and removeAllListeners clears one event or all', () => {
    const emitter = new TypedEmitter<Events>();
    emitter.on('frame', () => {});
    emitter.on('frame', () => {});
    emitter.once('closed', () => {});
    expect(emitter.listenerCount('frame')).toBe(2);
    expect(emitter.listenerCount('closed')).toBe(1);
    emitter.removeAllListeners('frame');
    expect(emitter.listenerCount('frame')).toBe(0);
    expect(emitter.listenerCount('closed')).toBe(1);
    emitter.on('frame', () => {});
    emitter.removeAllListeners();
    expect(emitter.listenerCount('frame')).toBe(0);
    expect(emitter.listenerCount('closed')).toBe(0);
  });
});

describe('safeCall', () => {
  it('runs the call once and logs nothing when it returns', () => {
    const logger = memoryLogger();
    let calls = 0;
    safeCall(logger, 'onFrame', () => {
      calls += 1;
    });
    expect(calls).toBe(1);
    expect(logger.records).toEqual([]);
  });

  it('logs what the call throws, with what it was, instead of throwing', () => {
    const logger = memoryLogger();
    expect(() =>
      safeCall(logger, 'onStats', () => {
        throw new Error('token svc_enr_abcdefgh leaked?');
      }),
    ).not.toThrow();
    expect(logger.records).toHaveLength(1);
    expect(logger.records[0]).toMatchObject({
      level: 'error',
      fields: { listener: 'onStats', err: { message: 'token svc_enr_*** leaked?' } },
    });
    expect(logger.records[0]!.message).toContain('onStats');
  });
});
