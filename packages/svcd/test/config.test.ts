import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_DEFAULTS, ConfigError, loadConfig, parseConfig } from '../src/config.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const AGENT = '[agent]\nrobot_id = "r1"\nsignal_url = "wss://cloud.example/ws"\n';

function issuesOf(text: string, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(text, 'svcd.toml', env);
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => i.message);
    throw err;
  }
  throw new Error('the configuration was accepted');
}

describe('daemon configuration', () => {
  it('reads the example file with every key of the specification', async () => {
    const config = await loadConfig(path.join(here, '../svcd.example.toml'), {});
    expect(config.agent).toMatchObject({
      robot_id: 'rover-7',
      quic_port: 4433,
      qos_profile: 'balanced',
      relay: true,
    });
    expect(config.channels.map((c) => [c.id, c.kind, c.name])).toEqual([
      [1, 'video', 'front'],
      [2, 'sensor', 'imu'],
      [3, 'command', 'drive'],
    ]);
    expect(config.channels[1]).toMatchObject({ address: { host: '127.0.0.1', port: 9100 } });
    expect(config.publisherControl).toEqual({ host: '127.0.0.1', port: 9300 });
    expect(Object.isFrozen(config.channels[0])).toBe(true);
  });

  it('fills the defaults in one place', () => {
    const config = parseConfig(AGENT);
    expect(config.agent).toMatchObject(AGENT_DEFAULTS);
    expect(config.channels).toEqual([]);
  });

  it('names the key, the value and what was expected', () => {
    expect(issuesOf(`${AGENT}quic_port = 70000\nqos_profile = "fast"\nipv6 = "yes"\n`)).toEqual([
      'agent.quic_port = 70000: expected an integer in 1..65535',
      'agent.ipv6 = "yes": expected true or false',
      'agent.qos_profile = "fast": expected one of latency, balanced, quality',
    ]);
    expect(issuesOf('[agent]\nrobot_id = "r1"\n')).toEqual([
      'agent.signal_url is missing: expected a wss://<host>/ws URL',
    ]);
  });

  it('rejects unknown keys with a suggestion', () => {
    expect(issuesOf(`${AGENT}quic_prot = 4433\n`)).toEqual([
      'unknown key agent.quic_prot; did you mean quic_port?',
    ]);
    expect(
      issuesOf(
        `${AGENT}[[channel]]\nkind = "video"\nname = "v"\ninput = "rtp://127.0.0.1:5004"\ncodec = "avc1.42e01f"\nfps = 30\nmax_bitrate = 1\n`,
      ),
    ).toEqual(['unknown key channel[0].max_bitrate; did you mean max_bitrate_kbps?']);
    expect(issuesOf(`${AGENT}[publisher]\nudp = "127.0.0.1:1"\n`)[0]).toMatch(
      /^unknown key publisher; did you mean publisher_control\?/,
    );
  });

  it('refuses a bare rtp:// Motion JPEG channel when the config is loaded, and names RTSP as the way', () => {
    const [issue] = issuesOf(
      `${AGENT}[[channel]]\nkind = "video"\nname = "cam"\ninput = "rtp://0.0.0.0:5004"\ncodec = "mjpeg"\nfps = 15\n`,
    );
    expect(issue).toMatch(
      /^channel\[0\]\.input = "rtp:\/\/0\.0\.0\.0:5004": Motion JPEG cannot be taken from a bare rtp:\/\/ input/,
    );
    expect(issue).toContain('input = "rtsp://..."');
  });

  it('warns about Motion JPEG over RTSP, checks codecs, and redacts credentials in messages', () => {
    const config = parseConfig(
      `${AGENT}[[channel]]\nkind = "video"\nname = "cam"\ninput = "rtsp://10.0.0.2/m"\ncodec = "mjpeg"\nfps = 15\n`,
    );
    expect(config.warnings[0]).toMatch(/Motion JPEG uses several times the bandwidth/);
    const issues = issuesOf(
      `${AGENT}[[channel]]\nkind = "video"\nname = "cam"\ninput = "rtsp://u:hunter2@10.0.0.2/m"\ncodec = "h264"\nfps = 15\n`,
    );
    expect(issues).toEqual([
      expect.stringMatching(/^channel\[0\]\.codec = "h264": codec "h264" is not one this service carries/),
    ]);
    const badUrl = issuesOf(
      `${AGENT}[[channel]]\nkind = "video"\nname = "cam"\ninput = "http://u:hunter2@10.0.0.2/m"\ncodec = "avc1.42e01f"\nfps = 15\n`,
    );
    expect(badUrl.join()).toContain('http://***@10.0.0.2/m');
    expect(badUrl.join()).not.toContain('hunter2');
  });

  it('checks sensor, command and publisher-control addresses, and unique names', () => {
    const issues = issuesOf(
      `${AGENT}[[channel]]\nkind = "sensor"\nname = "a"\ninput = "127.0.0.1:9"\ncodec = "json"\n` +
        `[[channel]]\nkind = "command"\nname = "a"\noutput = "udp://127.0.0.1:9"\ncodec = "xml"\n` +
        `[[channel]]\nkind = "lidar"\nname = "c"\n[publisher_control]\nudp = "127.0.0.1"\n`,
    );
    expect(issues).toEqual([
      'channel[0].input = "127.0.0.1:9": expected a udp://<address>:<port> URL to listen on',
      'channel[1].codec = "xml": expected json',
      'channel[2].kind = "lidar": expected a channel with kind = "video", "sensor" or "command"',
      'publisher_control.udp = "127.0.0.1": expected an <address>:<port> to send publisher-control datagrams to',
    ]);
  });

  it('lets SVC_ENROLMENT_TOKEN win over enrolment_token', () => {
    const text = `${AGENT}enrolment_token = "svc_enr_fromfile"\n`;
    expect(parseConfig(text).agent.enrolment_token).toBe('svc_enr_fromfile');
    expect(
      parseConfig(text, 'svcd.toml', { SVC_ENROLMENT_TOKEN: 'svc_enr_fromenv' }).agent.enrolment_token,
    ).toBe('svc_enr_fromenv');
  });

  it('reports TOML syntax errors with their position', () => {
    expect(issuesOf('[agent\nrobot_id = 1')[0]).toMatch(/^not valid TOML at line 1, column \d+/);
  });
});

describe('svcd check-config', () => {
  const svcd = path.resolve(here, '../bin/svcd');
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svcd-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('prints the channels of a good file and every problem of a bad one', async () => {
    const good = await promisify(execFile)(svcd, [
      'check-config',
      '--config',
      path.join(here, '../svcd.example.toml'),
    ]);
    expect(good.stdout).toContain(
      'channel 1 video "front" <- rtsp://192.0.2.10:554/stream1 avc1.42e01f 30 fps',
    );
    const bad = path.join(dir, 'bad.toml');
    const example = await readFile(path.join(here, '../svcd.example.toml'), 'utf8');
    await writeFile(
      bad,
      example
        .replace('codec = "avc1.42e01f"', 'codec = "mjpeg"')
        .replace('rtsp://192.0.2.10:554/stream1', 'rtp://0.0.0.0:5004'),
    );
    const failure = await promisify(execFile)(svcd, ['check-config', '--config', bad]).catch(
      (e: unknown) => e as { code: number; stderr: string },
    );
    expect(failure).toMatchObject({ code: 1 });
    expect((failure as { stderr: string }).stderr).toMatch(
      /error: invalid configuration .*bad\.toml: channel\[0\]\.input = "rtp:\/\/0\.0\.0\.0:5004": Motion JPEG/,
    );
  });
});
