/**
 * The state of a camera feed on fake time: `live` while pictures come, `no-data` with a reason a
 * person can act on when the port is listened on (or the RTSP session plays) but nothing comes,
 * `offline` when the camera cannot be read; never a credential in a reason.
 */
import { redactUrl } from '@svc/runtime';
import { FakeClock } from '@svc/runtime/testing';
import { describe, expect, it } from 'vitest';
import { MediaError } from '../src/errors.js';
import { SourceMonitor, type SourceStatus } from '../src/source-monitor.js';

const WALL = Date.UTC(2026, 0, 1);

function monitor(kind: 'udp' | 'rtsp', where = kind === 'udp' ? '127.0.0.1:5004' : 'rtsp://cam/stream1') {
  const clock = new FakeClock(0, WALL);
  const changes: SourceStatus[] = [];
  const source = new SourceMonitor({
    kind,
    where,
    codec: 'avc1.42c00d',
    noDataAfterMs: 1000,
    clock,
    onChange: (status) => changes.push(status),
  });
  return { clock, changes, source };
}

describe('SourceMonitor', () => {
  it('a port nobody sends to: no-data from the start, then the reason names the port', () => {
    const { clock, changes, source } = monitor('udp');
    expect(source.status).toMatchObject({ state: 'no-data', sinceMs: WALL });
    source.handleReachable();
    clock.advance(999);
    expect(changes).toEqual([]);
    clock.advance(1);
    expect(source.status).toEqual({
      state: 'no-data',
      reason:
        'no RTP packets on udp 127.0.0.1:5004 for over 1 s: check that the camera is running and sends to this port',
      sinceMs: WALL + 1000,
    });
    // It stays so, without repeating itself.
    clock.advance(10_000);
    expect(changes).toHaveLength(1);
  });

  it('pictures make it live; a camera that stops is no-data after the silence; back, live again', () => {
    const { clock, changes, source } = monitor('udp');
    source.handleReachable();
    clock.advance(200);
    for (let i = 0; i < 30; i++) {
      source.handlePacket(clock.now());
      source.handleAccessUnit(clock.now());
      clock.advance(33);
    }
    expect(source.status).toEqual({ state: 'live', sinceMs: WALL + 200 });
    const stoppedAt = clock.now() - 33;
    clock.advance(1000 - 34);
    expect(source.status.state).toBe('live');
    clock.advance(1);
    expect(source.status).toMatchObject({ state: 'no-data', sinceMs: WALL + stoppedAt + 1000 });
    expect(source.status.reason).toMatch(/^no RTP packets on udp 127\.0\.0\.1:5004 for over 1 s/);
    clock.advance(5000);
    source.handlePacket(clock.now());
    source.handleAccessUnit(clock.now());
    expect(changes.map((c) => c.state)).toEqual(['live', 'no-data', 'live']);
  });

  it('packets without pictures (another codec, a wrong payload type) say so', () => {
    const { clock, source } = monitor('udp');
    source.handleReachable();
    for (let i = 0; i < 40; i++) {
      source.handlePacket(clock.now());
      clock.advance(50);
    }
    expect(source.status.state).toBe('no-data');
    expect(source.status.reason).toBe(
      'RTP packets arrive from udp 127.0.0.1:5004 but no whole picture for over 1 s: check that the camera sends avc1.42c00d as configured (codec and payload type)',
    );
  });

  it('an RTSP camera that refuses the connection is offline, with the reason and no credentials', () => {
    const url = redactUrl('rtsp://admin:hunter2@cam.local:8554/stream1');
    const { changes, source } = monitor('rtsp', url);
    source.handleFailure(
      new MediaError('unreachable', 'cannot connect to cam.local:8554: connect ECONNREFUSED 10.0.0.9:8554'),
      false,
    );
    expect(source.status.state).toBe('offline');
    expect(source.status.reason).toMatch(
      /^RTSP rtsp:\/\/.*cam\.local:8554\/stream1 unreachable: cannot connect to cam\.local:8554: connection refused; check/,
    );
    expect(JSON.stringify(changes)).not.toContain('hunter2');
    expect(JSON.stringify(changes)).not.toContain('admin');
  });

  it('RTSP: playing but silent is no-data; a stall that restarts the session stays no-data; a lost connection is offline; playing again, live', () => {
    const { clock, changes, source } = monitor('rtsp');
    source.handleReachable();
    clock.advance(1000);
    expect(source.status.reason).toBe(
      'no video from RTSP rtsp://cam/stream1 for over 1 s: check that the camera is running',
    );
    source.handleFailure(new MediaError('timeout', 'no RTP from rtsp://cam/stream1 for 5000 ms'), true);
    expect(source.status.state).toBe('no-data');
    expect(source.status.reason).toMatch(/; reconnecting$/);
    source.handleFailure(new MediaError('unreachable', 'the camera at cam:554 closed the connection'), false);
    expect(source.status).toMatchObject({
      state: 'offline',
      reason:
        "RTSP rtsp://cam/stream1 unreachable: the camera at cam:554 closed the connection; check the camera's address and that it is on",
    });
    // Offline: no silence timer runs.
    clock.advance(10_000);
    expect(source.status.state).toBe('offline');
    source.handleReachable();
    expect(source.status).toMatchObject({ state: 'no-data' });
    source.handleAccessUnit(clock.now());
    expect(changes.map((c) => c.state)).toEqual(['no-data', 'no-data', 'offline', 'no-data', 'live']);
  });

  it('a login the camera refuses and a missing mount say what to fix', () => {
    const { source } = monitor('rtsp');
    source.handleFailure(new MediaError('unauthorized', 'DESCRIBE answered 401'), false);
    expect(source.status.reason).toMatch(/refused the login: .*check SVC_RTSP_USER and SVC_RTSP_PASSWORD/);
    source.handleFailure(new MediaError('not-found', 'no such stream/mount'), false);
    expect(source.status.reason).toMatch(/has no such stream: .*check the path/);
  });

  it('stopped, it changes no more', () => {
    const { clock, changes, source } = monitor('udp');
    source.handleReachable();
    source.stop();
    clock.advance(5000);
    source.handleAccessUnit(clock.now());
    expect(changes).toEqual([]);
    expect(clock.pendingTimers).toBe(0);
  });
});
