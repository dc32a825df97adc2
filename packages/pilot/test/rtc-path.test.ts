/**
 * How a WebRTC session travels, read from the browser's statistics as Chromium reports them: a
 * TURN relay candidate on either side of the selected pair makes the session `relay`.
 */
import { describe, expect, it } from 'vitest';
import { selectedPath } from '../src/connection/rtc-transport.js';

type Stat = Record<string, unknown> & { id: string; type: string };

function report(stats: Stat[]): RTCStatsReport {
  return new Map(stats.map((s) => [s.id, s])) as unknown as RTCStatsReport;
}

const candidates = (local: string, remote: string): Stat[] => [
  { id: 'L', type: 'local-candidate', candidateType: local },
  { id: 'R', type: 'remote-candidate', candidateType: remote },
  { id: 'L2', type: 'local-candidate', candidateType: 'relay' },
  { id: 'P', type: 'candidate-pair', localCandidateId: 'L', remoteCandidateId: 'R', state: 'succeeded' },
  { id: 'P2', type: 'candidate-pair', localCandidateId: 'L2', remoteCandidateId: 'R', state: 'waiting' },
];

describe('the path of a WebRTC session', () => {
  it('is direct on a host or server-reflexive pair, whatever other pairs there are', () => {
    expect(
      selectedPath(
        report([
          ...candidates('srflx', 'host'),
          { id: 'T', type: 'transport', selectedCandidatePairId: 'P' },
        ]),
      ),
    ).toBe('direct');
  });

  it('is relay when the selected pair has a TURN candidate on either side', () => {
    const selected = { id: 'T', type: 'transport', selectedCandidatePairId: 'P' };
    expect(selectedPath(report([...candidates('relay', 'srflx'), selected]))).toBe('relay');
    expect(selectedPath(report([...candidates('host', 'relay'), selected]))).toBe('relay');
  });

  it('falls back to the nominated pair that succeeded when the transport names none', () => {
    const stats = candidates('relay', 'host').map((s) => (s.id === 'P' ? { ...s, nominated: true } : s));
    expect(selectedPath(report(stats))).toBe('relay');
    expect(selectedPath(report([]))).toBe('direct');
  });
});
