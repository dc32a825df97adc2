import { defineConfig } from 'vitest/config';

/**
 * End-to-end tests whose assertions hold only when the machine is not also running another test
 * file: each runs a real publisher, svcd and Chromium and asserts that no frame is lost or that
 * the picture keeps coming within the QoS grace. With a second heavy file on the same two cores,
 * a daemon starved for a few hundred ms queues a backlog of its own and drops a frame for it,
 * which is congestion, not what the test is about. They run after everything else, one at a time.
 */
const ALONE = [
  'packages/svcd/test/abr.test.ts',
  'packages/svcd/test/e2e-direct.test.ts',
  'packages/svcd/test/first-picture.test.ts',
  'packages/svcd/test/join-replay.test.ts',
  'packages/svcd/test/probe-input.test.ts',
  'packages/svcd/test/recovery-ladder.test.ts',
];

const shared = {
  resolve: { conditions: ['source'] },
  ssr: { resolve: { conditions: ['source'] } },
} as const;

export default defineConfig({
  ...shared,
  test: {
    reporters: ['default'],
    projects: [
      {
        ...shared,
        test: {
          name: 'shared',
          // Builds the console and pilot pages svc-cloud serves (quick when they are up to date);
          // none of the files that run alone opens them.
          globalSetup: ['scripts/test/global-setup.ts'],
          include: ['packages/*/test/**/*.test.ts', 'scripts/test/**/*.test.ts'],
          exclude: ALONE,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        ...shared,
        test: {
          name: 'alone',
          include: ALONE,
          testTimeout: 60_000,
          hookTimeout: 120_000,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          // Their figures still swing with the machine (an ABR step, a layer switch timed to the
          // second): a failed test runs once more, and fails the run if it fails again.
          retry: 1,
        },
      },
    ],
  },
});
