/**
 * The safety keys of `[agent]` (`max_command_age_ms`, `command_timeout_ms`, `driver_grace_ms`)
 * and the test-only robot clock offset (`SVC_TEST_CLOCK_OFFSET_MS`).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runSvcd } from '@svc/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonClockMs, setTestClockOffsetMs, testClockOffsetFromEnv } from '../src/clock.js';
import { ConfigError, loadConfig, parseConfig } from '../src/config.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const AGENT = '[agent]\nrobot_id = "r1"\nsignal_url = "wss://cloud.example/ws"\n';

function issuesOf(text: string): string[] {
  try {
    parseConfig(text);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => i.message);
    throw err;
  }
  throw new Error('the configuration was accepted');
}

describe('safety keys of [agent]', () => {
  it('default to 500, 1000 and 5000 ms, and the example file sets each', async () => {
    expect(parseConfig(AGENT).agent).toMatchObject({
      max_command_age_ms: 500,
      command_timeout_ms: 1000,
      driver_grace_ms: 5000,
    });
    const example = await loadConfig(path.join(here, '../svcd.example.toml'), {});
    expect(example.agent).toMatchObject({
      max_command_age_ms: 500,
      command_timeout_ms: 1000,
      driver_grace_ms: 5000,
    });
    expect(
      parseConfig(`${AGENT}max_command_age_ms = 250\ncommand_timeout_ms = 3000\ndriver_grace_ms = 0\n`).agent,
    ).toMatchObject({ max_command_age_ms: 250, command_timeout_ms: 3000, driver_grace_ms: 0 });
  });

  it('name the key, the value and what was expected', () => {
    expect(
      issuesOf(`${AGENT}max_command_age_ms = 0\ncommand_timeout_ms = "1s"\ndriver_grace_ms = -5\n`),
    ).toEqual([
      'agent.max_command_age_ms = 0: expected an integer in 20..60000',
      'agent.command_timeout_ms = "1s": expected an integer in 100..3600000',
      'agent.driver_grace_ms = -5: expected an integer in 0..600000',
    ]);
    expect(issuesOf(`${AGENT}driver_grace = 5000\n`)).toEqual([
      'unknown key agent.driver_grace; did you mean driver_grace_ms?',
    ]);
  });
});

describe('svcd check-config and the safety keys', () => {
  it('prints the safety settings in force, and names a bad key', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svcd-safety-'));
    try {
      const good = path.join(dir, 'good.toml');
      await writeFile(good, `${AGENT}driver_grace_ms = 2000\n`);
      const ok = await runSvcd(['check-config', '--config', good]);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toContain(
        'safety: commands older than 500 ms dropped, driver-idle after 1000 ms without a command, driver slot kept 2000 ms for the same user',
      );
      const bad = path.join(dir, 'bad.toml');
      await writeFile(bad, `${AGENT}command_timeout_ms = 10\n`);
      const refused = await runSvcd(['check-config', '--config', bad]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('agent.command_timeout_ms = 10: expected an integer in 100..3600000');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('test-only robot clock offset', () => {
  afterEach(() => setTestClockOffsetMs(0));

  it('reads an integer number of ms, negative too; unset or empty is none', () => {
    expect(testClockOffsetFromEnv({ SVC_TEST_CLOCK_OFFSET_MS: '250' })).toEqual({ ok: true, offsetMs: 250 });
    expect(testClockOffsetFromEnv({ SVC_TEST_CLOCK_OFFSET_MS: '-250' })).toEqual({
      ok: true,
      offsetMs: -250,
    });
    expect(testClockOffsetFromEnv({})).toEqual({ ok: true, offsetMs: undefined });
    expect(testClockOffsetFromEnv({ SVC_TEST_CLOCK_OFFSET_MS: '' })).toEqual({
      ok: true,
      offsetMs: undefined,
    });
  });

  it('refuses anything else, naming the variable, the value and what is expected', () => {
    for (const value of ['2.5', '250ms', 'abc', '1e3']) {
      const result = testClockOffsetFromEnv({ SVC_TEST_CLOCK_OFFSET_MS: value });
      expect(result).toEqual({
        ok: false,
        message: expect.stringContaining(
          `SVC_TEST_CLOCK_OFFSET_MS = "${value}": expected an integer number of milliseconds`,
        ),
      });
    }
  });

  it("shifts the daemon's clock", () => {
    const before = daemonClockMs();
    setTestClockOffsetMs(-60_000);
    const after = daemonClockMs();
    expect(after - before).toBeLessThan(-59_000);
    expect(() => setTestClockOffsetMs(0.5)).toThrow(TypeError);
  });

  it('svcd refuses to start with a bad value, and says why', async () => {
    const config = path.join(here, '../svcd.example.toml');
    const result = await runSvcd(['--config', config], { SVC_TEST_CLOCK_OFFSET_MS: 'soon' });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'error: SVC_TEST_CLOCK_OFFSET_MS = "soon": expected an integer number of milliseconds',
    );
  });
});
