/**
 * `svcd`, the robot daemon's command line.
 *
 *   svcd probe-input <url> --codec <value> [--seconds N] [--json] [--transport tcp|udp]
 *   svcd check-config --config <path>
 *   svcd --config <path> [--host <address>]
 *   svcd --config <path> enrol [--token <token>] [--signal-url <url>]
 */

import { parseArgs } from 'node:util';
import { isMediaError } from '@svc/media';
import { type Logger, redactText, redactUrl } from '@svc/runtime';
import { closeWebRtc } from '@svc/transport';
import { type RunningAgent, runAgent } from './agent.js';
import { setTestClockOffsetMs, TEST_CLOCK_OFFSET_ENV, testClockOffsetFromEnv } from './clock.js';
import { ConfigError, type DaemonConfig, loadConfig } from './config.js';
import { isCredentialError, loadOrCreateCredential } from './credential.js';
import { enrolmentBaseUrl, isEnrolmentError, redeemEnrolmentToken } from './enrolment.js';
import { stderrLogger } from './log.js';
import { type ProbeSummary, probeInput } from './probe.js';

const USAGE = `usage:
  svcd --config <path> [--host <address>]
  svcd --config <path> enrol [--token <token>] [--signal-url <url>]
  svcd check-config --config <path>
  svcd probe-input <url> --codec <value> [--seconds N] [--json] [--transport tcp|udp]

  The daemon: creates the robot key at credential_path on first run, enrols when a token is
  configured (SVC_ENROLMENT_TOKEN or enrolment_token; on a first run a failure is fatal), connects
  to signal_url, and serves pilots holding a pilot session token for this robot over WebTransport
  on quic_port. --host binds one address and announces only it.

  enrol registers this robot with the service: it creates the robot key at credential_path if
  missing and redeems a one-time enrolment token (console: Fleet, Create enrolment token) at
  https://<host>/api/v1/enrol, the host taken from signal_url (wss://<host>/ws) or --signal-url.
  The token is --token, else SVC_ENROLMENT_TOKEN, else enrolment_token in the configuration;
  prefer the environment variable in scripts so the token is not kept on disk.

  check-config reads the daemon's TOML configuration and reports every problem with the key, the
  value and what was expected, or prints the channels it would run.

  Connects to a camera or RTP source the way a video channel would and describes what arrives:
  one line per access unit, then frame rate, bitrate, keyframe interval, B-frames, slices,
  parameter sets, and the codec string the stream implies. Credentials for rtsp:// come from the
  URL or from SVC_RTSP_USER / SVC_RTSP_PASSWORD.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'probe-input') return probeCommand(rest);
  if (command === 'check-config') return checkConfigCommand(rest);
  const enrolArgs = enrolArguments(argv);
  if (enrolArgs !== undefined) return enrolCommand(enrolArgs);
  if (command === '--config') return runCommand(argv);
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return command === undefined ? 2 : 0;
  }
  console.error(`svcd: unknown command "${command}"\n\n${USAGE}`);
  return 2;
}

async function probeCommand(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseProbeArgs>;
  try {
    parsed = parseProbeArgs(args);
  } catch (err) {
    console.error(`svcd probe-input: ${redactText((err as Error).message)}\n\n${USAGE}`);
    return 2;
  }
  const { url, codec, seconds, json, transport } = parsed;
  const print = (value: object) => console.log(JSON.stringify(value));
  try {
    const summary = await probeInput({
      input: url,
      codec,
      seconds,
      ...(transport !== undefined && { rtspTransport: transport }),
      logger: stderrLogger('info'),
      onAccessUnit: (_au, line) => {
        if (json) print({ type: 'access-unit', ...line });
        else {
          const key = line.keyframe ? 'key' : '   ';
          const nal = line.nalTypes.length > 0 ? `  NAL ${line.nalTypes.join(',')}` : '';
          console.log(`  t=${line.t.toFixed(3)}s  ${key}  ${String(line.bytes).padStart(7)} B${nal}`);
        }
      },
    });
    if (json) print({ type: 'summary', ...summary });
    else console.log(describe(summary));
    if (!summary.codecMatches) {
      const message = `codec mismatch: the stream's parameter sets imply ${summary.streamCodec}, the channel is configured with ${summary.configuredCodec}; set codec = "${summary.streamCodec}"`;
      if (json) print({ type: 'error', code: 'codec-mismatch', message });
      else console.error(`error: ${message}`);
      return 1;
    }
    return 0;
  } catch (err) {
    const code = isMediaError(err) ? err.code : 'internal';
    const message = redactText(err instanceof Error ? err.message : String(err));
    if (json) print({ type: 'error', code, message });
    else console.error(`error (${code}): ${message}`);
    return 1;
  }
}

async function runCommand(args: string[]): Promise<number> {
  let values: { config?: string; host?: string };
  try {
    values = parseArgs({ args, options: { config: { type: 'string' }, host: { type: 'string' } } }).values;
  } catch (err) {
    const message = (err as Error).message;
    // The development mode of the first daemon is gone: say what replaced it.
    const hint = args.includes('--dev')
      ? "\n--dev was removed: pilots now get the robot's address and certificate hash from svc-cloud; " +
        'run svc-cloud (SVC_DEV_OPEN_ENROLMENT=1 for a robot without a token) and start svcd without --dev'
      : '';
    console.error(`svcd: ${message}${hint}\n\n${USAGE}`);
    return 2;
  }
  if (values.config === undefined) {
    console.error(`svcd: --config <path> is required\n\n${USAGE}`);
    return 2;
  }
  const logger = stderrLogger('info');
  let config: DaemonConfig;
  try {
    config = await loadConfig(values.config);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`error: invalid configuration ${err.message}`);
    return 1;
  }
  const clockOffset = testClockOffsetFromEnv(process.env);
  if (!clockOffset.ok) {
    console.error(`error: ${clockOffset.message}`);
    return 1;
  }
  if (clockOffset.offsetMs !== undefined) {
    setTestClockOffsetMs(clockOffset.offsetMs);
    logger.warn(
      { offsetMs: clockOffset.offsetMs },
      `${TEST_CLOCK_OFFSET_ENV} is set: the robot's clock is shifted by ${clockOffset.offsetMs} ms (for tests only)`,
    );
  }
  return runAgentUntilSignal(values.config, config, logger, values.host);
}

/** The deployed daemon: enrolment, token verification, signalling; runs until SIGINT or SIGTERM. */
async function runAgentUntilSignal(
  configPath: string,
  config: DaemonConfig,
  logger: Logger,
  host: string | undefined,
): Promise<number> {
  let agent: RunningAgent;
  try {
    agent = await runAgent({ config, configPath, logger, ...(host !== undefined && { host }) });
  } catch (err) {
    if (isEnrolmentError(err)) {
      console.error(`error (${err.code}): first start without an enrolled key: ${err.message}`);
      return 1;
    }
    if (isCredentialError(err)) {
      console.error(`error (${err.code}): ${err.message}`);
      return 1;
    }
    console.error(`error: ${redactText(err instanceof Error ? err.message : String(err))}`);
    return 1;
  }
  await untilSignal();
  await agent.stop();
  // libdatachannel's threads would keep the process from exiting.
  closeWebRtc();
  return 0;
}

function untilSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
}

/** The arguments of `svcd [--config <path>] enrol ...` without the word `enrol`, or `undefined`. */
function enrolArguments(argv: string[]): string[] | undefined {
  const at = argv[0] === 'enrol' ? 0 : argv[0] === '--config' ? 2 : argv[0]?.startsWith('--config=') ? 1 : -1;
  return at >= 0 && argv[at] === 'enrol' ? [...argv.slice(0, at), ...argv.slice(at + 1)] : undefined;
}

async function enrolCommand(args: string[]): Promise<number> {
  let values: { config?: string; token?: string; 'signal-url'?: string };
  try {
    values = parseArgs({
      args,
      options: { config: { type: 'string' }, token: { type: 'string' }, 'signal-url': { type: 'string' } },
    }).values;
  } catch (err) {
    // The message may quote an argument, and the token is one.
    console.error(
      `svcd enrol: ${redactText((err as Error).message).replace(/svc_enr_\S+/g, 'svc_enr_***')}\n\n${USAGE}`,
    );
    return 2;
  }
  if (values.config === undefined) {
    console.error(`svcd enrol: --config <path> is required\n\n${USAGE}`);
    return 2;
  }
  let config: DaemonConfig;
  try {
    config = await loadConfig(values.config);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`error: invalid configuration ${err.message}`);
    return 1;
  }
  // loadConfig already put SVC_ENROLMENT_TOKEN over the file's enrolment_token.
  const token = values.token ?? config.agent.enrolment_token;
  if (token === undefined) {
    console.error(
      `svcd enrol: no enrolment token: give --token <token>, set SVC_ENROLMENT_TOKEN, or set enrolment_token in ${values.config}\n\n${USAGE}`,
    );
    return 2;
  }
  const logger = stderrLogger('info');
  const robotId = config.agent.robot_id;
  try {
    const baseUrl = enrolmentBaseUrl(config.agent.signal_url, values['signal-url']);
    const credential = await loadOrCreateCredential(config.agent.credential_path, { logger });
    if (credential.created)
      logger.info({ file: credential.path, publicKey: credential.publicKey }, 'created the robot key');
    const { status, record } = await redeemEnrolmentToken({ baseUrl, robotId, credential, token, logger });
    const already = status === 'already-redeemed' ? ` (this token was redeemed at ${record.enrolledAt})` : '';
    console.log(
      `enrolled: robot ${record.robotId} in org ${record.orgId} at ${redactUrl(record.baseUrl)}${already}`,
    );
    return 0;
  } catch (err) {
    if (!isEnrolmentError(err) && !isCredentialError(err)) throw err;
    console.error(`error (${err.code}): ${err.message}`);
    return 1;
  }
}

async function checkConfigCommand(args: string[]): Promise<number> {
  let file: string | undefined;
  try {
    file = parseArgs({ args, options: { config: { type: 'string' } } }).values.config;
  } catch (err) {
    console.error(`svcd check-config: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (file === undefined) {
    console.error(`svcd check-config: --config <path> is required\n\n${USAGE}`);
    return 2;
  }
  try {
    const config = await loadConfig(file);
    for (const warning of config.warnings) console.error(`warn: ${warning}`);
    console.log(describeConfig(file, config));
    return 0;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`error: invalid configuration ${err.message}`);
    return 1;
  }
}

function describeConfig(file: string, config: DaemonConfig): string {
  const { agent } = config;
  const lines = [
    `${file}: ok`,
    `  robot ${agent.robot_id}, signalling ${redactUrl(agent.signal_url)}, QUIC port ${agent.quic_port}, profile ${agent.qos_profile}, up to ${agent.max_sessions} sessions`,
    `  safety: commands older than ${agent.max_command_age_ms} ms dropped, driver-idle after ${agent.command_timeout_ms} ms without a command, driver slot kept ${agent.driver_grace_ms} ms for the same user`,
  ];
  for (const c of config.channels) {
    if (c.kind === 'video' && c.layer.length > 0) {
      lines.push(
        `  channel ${c.id} video "${c.name}" ${c.codec} ${c.fps} fps, simulcast: ${c.layer.length} layers, one forwarded at a time`,
      );
      for (const [index, layer] of c.layer.entries())
        lines.push(
          `    layer ${index} "${layer.name}" <- ${redactUrl(layer.input)} from ${layer.min_bitrate_kbps} kbit/s`,
        );
      continue;
    }
    const where = c.kind === 'command' ? `-> ${redactUrl(c.output)}` : `<- ${redactUrl(c.input ?? '')}`;
    const extra = c.kind === 'video' ? ` ${c.codec} ${c.fps} fps` : '';
    lines.push(`  channel ${c.id} ${c.kind} "${c.name}" ${where}${extra}`);
  }
  if (config.publisherControl !== undefined) {
    lines.push(`  publisher control -> ${config.publisherControl.host}:${config.publisherControl.port}`);
  }
  return lines.join('\n');
}

function parseProbeArgs(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      codec: { type: 'string' },
      seconds: { type: 'string', default: '5' },
      json: { type: 'boolean', default: false },
      transport: { type: 'string' },
    },
  });
  const [url, ...extra] = positionals;
  if (url === undefined || extra.length > 0) throw new Error('give exactly one input URL');
  if (values.codec === undefined)
    throw new Error('--codec is required (e.g. avc1.42e01e, hev1.1.6.L93.B0, mjpeg)');
  const seconds = Number(values.seconds);
  if (!(seconds > 0 && seconds <= 3600))
    throw new Error(`--seconds must be a number in (0, 3600], got ${values.seconds}`);
  const transport = values.transport;
  if (transport !== undefined && transport !== 'tcp' && transport !== 'udp') {
    throw new Error(`--transport must be tcp or udp, got ${transport}`);
  }
  return {
    url,
    codec: values.codec,
    seconds,
    json: values.json,
    transport: transport as 'tcp' | 'udp' | undefined,
  };
}

function describe(s: ProbeSummary): string {
  const interval =
    s.keyframeIntervalFrames === undefined
      ? `${s.keyframes} keyframe(s), too few for an interval`
      : `keyframe every ${s.keyframeIntervalFrames.toFixed(1)} frames (${(s.keyframeIntervalFrames / (s.fps || 1)).toFixed(2)} s)`;
  const yesNo = (v: boolean) => (v ? 'yes' : 'no');
  return [
    `summary for ${s.input}:`,
    `  ${s.accessUnits} access units over ${s.seconds.toFixed(2)} s: ${s.fps.toFixed(1)} fps, ${s.bitrateKbps.toFixed(0)} kbit/s`,
    `  ${interval}`,
    `  B-frames: ${yesNo(s.bFrames)}; multiple slices: ${yesNo(s.multipleSlices)}; parameter sets in-band: ${yesNo(s.inBandParameterSets)}`,
    `  codec: configured ${s.configuredCodec}, stream implies ${s.streamCodec ?? 'unknown (no parameter set seen)'}${s.codecMatches ? '' : '  <- MISMATCH'}`,
    `  packets lost: ${s.packetsLost}, malformed: ${s.packetsMalformed}`,
  ].join('\n');
}

process.exitCode = await main(process.argv.slice(2));
