import { fileURLToPath } from 'node:url';
import { ChromiumSession } from '@svc/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeFecKernel } from '../src/fec/reed-solomon.js';
import { type ConformanceReport, runConformance } from './conformance.js';

const entry = fileURLToPath(new URL('./conformance.ts', import.meta.url));
const probe = fileURLToPath(new URL('./support/kernel-probe.ts', import.meta.url));

describe('the same wire code in Node and in headless Chromium', () => {
  let chromium: ChromiumSession;
  let node: ConformanceReport;

  beforeAll(async () => {
    chromium = await ChromiumSession.open();
    node = runConformance('auto');
  });
  afterAll(async () => {
    await chromium?.close();
  });

  it('does real work in Node: every frame accounted, nothing corrupted, malformed input coded', () => {
    expect(node.packed.flat().length).toBeGreaterThan(500);
    expect(node.errors).not.toContain('accepted');
    expect(node.errors.every((code) => !code.startsWith('uncoded'))).toBe(true);
    for (const sim of node.simulations) {
      expect(sim.framesCorrupted).toBe(0);
      expect((sim.framesDelivered as number) + (sim.framesReportedLost as number)).toBe(sim.framesSent);
      expect(sim.framesRepaired).toBeGreaterThan(0);
    }
    expect(node.repairs.every((r) => r.delivered.length > 0)).toBe(true);
  });

  it('gives the same bytes and results on the scalar kernel in Node', () => {
    expect(runConformance('scalar')).toEqual(node);
  });

  it('gives the same bytes and results in Chromium, on both kernels', async () => {
    expect(await chromium.run({ entry: probe, exportName: 'simdKernelAvailable' })).toBe(
      activeFecKernel() === 'simd',
    );
    for (const kernel of ['auto', 'scalar'] as const) {
      const browser = await chromium.run<ConformanceReport>({
        entry,
        exportName: 'runConformance',
        args: [kernel],
        timeoutMs: 60_000,
      });
      expect(browser).toEqual(node);
    }
  });
});
