import { describe, expect, it } from 'vitest';
import {
  LADDER_QUIET_RESET_MS,
  qosProfile,
  RECOVERY_REQUEST_INTERVAL_MS,
  RecoveryLadder,
  type RecoveryRequest,
} from '../src/index.js';

const GRACE = qosProfile('balanced').recoveryGraceMs;

function ladder(enabled = true): RecoveryLadder {
  return new RecoveryLadder({ recoveryGraceMs: GRACE, enabled });
}

describe('RecoveryLadder climbing', () => {
  it('starts at ltr and climbs only when a rung has had its grace and loss continues', () => {
    const l = ladder();
    expect(l.rung).toBe('ltr');
    expect(l.handleLoss(0)).toEqual({ kind: 'ltr', reason: 'loss' });
    // More loss within the grace: the ltr asked for is still on its way, nothing new.
    expect(l.handleLoss(300)).toBeNull();
    expect(l.handleLoss(GRACE - 1)).toBeNull();
    expect(l.rung).toBe('ltr');
    // The grace is over and loss continues.
    expect(l.handleLoss(GRACE)).toEqual({ kind: 'intra_refresh', reason: 'loss' });
    expect(l.rung).toBe('intra_refresh');
    expect(l.handleLoss(GRACE + 500)).toBeNull();
    expect(l.handleLoss(2 * GRACE, 'frames dropped')).toEqual({ kind: 'idr', reason: 'frames dropped' });
    // At the top, continued loss asks for an IDR again once per grace.
    expect(l.handleLoss(2 * GRACE + 100)).toBeNull();
    expect(l.handleLoss(3 * GRACE)).toEqual({ kind: 'idr', reason: 'loss' });
    expect(l.rung).toBe('idr');
    expect(l.stats.climbs).toBe(2);
  });

  it('does not climb when the grace passes without further loss, only when loss comes after it', () => {
    const l = ladder();
    l.handleLoss(0);
    expect(l.handleTick(GRACE + 100)).toBeNull();
    expect(l.rung).toBe('ltr');
    expect(l.handleLoss(GRACE + 200)).toEqual({ kind: 'intra_refresh', reason: 'loss' });
  });

  it('asks the same rung again after a recovery point, without restarting its grace', () => {
    const l = ladder();
    l.handleLoss(0);
    l.handleRecoveryPoint(100);
    expect(l.handleLoss(400)).toEqual({ kind: 'ltr', reason: 'loss' });
    expect(l.handleLoss(GRACE)).toEqual({ kind: 'intra_refresh', reason: 'loss' });
  });

  it('is back on ltr after two quiet seconds, and not before', () => {
    const l = ladder();
    l.handleLoss(0);
    l.handleLoss(GRACE);
    expect(l.rung).toBe('intra_refresh');
    expect(l.handleTick(GRACE + LADDER_QUIET_RESET_MS - 1)).toBeNull();
    expect(l.rung).toBe('intra_refresh');
    l.handleTick(GRACE + LADDER_QUIET_RESET_MS);
    expect(l.rung).toBe('ltr');
    expect(l.stats.resets).toBe(1);
    expect(l.handleLoss(GRACE + LADDER_QUIET_RESET_MS + 10)).toEqual({ kind: 'ltr', reason: 'loss' });

    // Also when the next loss is the first call after the quiet time.
    const m = ladder();
    m.handleLoss(0);
    m.handleLoss(GRACE);
    expect(m.handleLoss(GRACE + LADDER_QUIET_RESET_MS)).toEqual({ kind: 'ltr', reason: 'loss' });
  });

  it('never escalates on isolated losses spaced by quiet seconds', () => {
    const l = ladder();
    const kinds: string[] = [];
    for (let t = 0; t < 60_000; t += LADDER_QUIET_RESET_MS + 500) kinds.push(l.handleLoss(t)?.kind ?? 'none');
    expect(new Set(kinds)).toEqual(new Set(['ltr']));
  });
});

describe('RecoveryLadder keyframe requests', () => {
  it('answers request-keyframe with idr outside the ladder', () => {
    const l = ladder();
    expect(l.handleKeyframeRequest(0)).toEqual({ kind: 'idr', reason: 'request-keyframe' });
    expect(l.rung).toBe('ltr');
    expect(l.handleLoss(RECOVERY_REQUEST_INTERVAL_MS)).toEqual({ kind: 'ltr', reason: 'loss' });
    // A keyframe request while the ladder waits on its rung is still sent.
    expect(l.handleKeyframeRequest(2 * RECOVERY_REQUEST_INTERVAL_MS, 'join')).toEqual({
      kind: 'idr',
      reason: 'join',
    });
    expect(l.rung).toBe('ltr');
  });

  it('makes every request idr when disabled', () => {
    const l = ladder(false);
    expect(l.rung).toBe('idr');
    expect(l.handleLoss(0)).toEqual({ kind: 'idr', reason: 'loss' });
    expect(l.handleLoss(GRACE)).toEqual({ kind: 'idr', reason: 'loss' });
    l.handleTick(GRACE + LADDER_QUIET_RESET_MS);
    expect(l.handleLoss(GRACE + LADDER_QUIET_RESET_MS)).toEqual({ kind: 'idr', reason: 'loss' });
    expect(l.handleKeyframeRequest(10_000)).toEqual({ kind: 'idr', reason: 'request-keyframe' });
    expect(l.rung).toBe('idr');
  });
});

describe('RecoveryLadder rate limit', () => {
  it('sends at most one request per 250 ms across the channel', () => {
    const l = ladder();
    const sent: { at: number; request: RecoveryRequest }[] = [];
    for (let t = 0; t < 5000; t += 10) {
      const request =
        t % 30 === 0 ? l.handleKeyframeRequest(t) : t % 20 === 0 ? l.handleLoss(t) : l.handleTick(t);
      if (request !== null) sent.push({ at: t, request });
    }
    expect(sent.length).toBeGreaterThan(10);
    for (let i = 1; i < sent.length; i++) {
      expect(sent[i]!.at - sent[i - 1]!.at).toBeGreaterThanOrEqual(RECOVERY_REQUEST_INTERVAL_MS);
    }
  });

  it('delays a request the limit refuses and releases it once the 250 ms pass', () => {
    const l = ladder();
    expect(l.handleLoss(1000)).toEqual({ kind: 'ltr', reason: 'loss' });
    expect(l.handleKeyframeRequest(1100)).toBeNull();
    expect(l.pending).toEqual({ kind: 'idr', reason: 'request-keyframe' });
    expect(l.handleTick(1000 + RECOVERY_REQUEST_INTERVAL_MS - 1)).toBeNull();
    expect(l.handleTick(1000 + RECOVERY_REQUEST_INTERVAL_MS)).toEqual({
      kind: 'idr',
      reason: 'request-keyframe',
    });
    expect(l.pending).toBeNull();
    expect(l.handleTick(2000)).toBeNull();
    expect(l.stats).toMatchObject({ sent: 2, delayed: 1 });
  });

  it('keeps the strongest of the requests held back, sent once', () => {
    const l = ladder();
    l.handleKeyframeRequest(0);
    expect(l.handleLoss(50)).toBeNull();
    expect(l.handleKeyframeRequest(100)).toBeNull();
    expect(l.handleLoss(150)).toBeNull();
    expect(l.handleTick(250)).toEqual({ kind: 'idr', reason: 'request-keyframe' });
    expect(l.handleTick(600)).toBeNull();
    // The ladder's loss was served by that IDR: its rung's grace runs from it.
    expect(l.handleLoss(700)).toBeNull();
    expect(l.handleLoss(250 + GRACE)).toEqual({ kind: 'intra_refresh', reason: 'loss' });
  });

  it('drops a held-back request when a recovery point makes it moot', () => {
    const l = ladder();
    l.handleLoss(0);
    expect(l.handleKeyframeRequest(100)).toBeNull();
    l.handleRecoveryPoint(150);
    expect(l.pending).toBeNull();
    expect(l.handleTick(400)).toBeNull();
  });

  it('rejects a clock that goes back or a grace that is not a duration', () => {
    const l = ladder();
    l.handleLoss(100);
    expect(() => l.handleTick(99)).toThrow(/went back/);
    expect(() => new RecoveryLadder({ recoveryGraceMs: 0 })).toThrow(/recoveryGraceMs/);
  });
});
