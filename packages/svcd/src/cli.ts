/**
 * `svcd`, the robot daemon's command line.
 *
 *   svcd probe-input <url> --codec <value> [--seconds N] [--json] [--transport tcp|udp]
 *   svcd check-config --config <path>
 *   svcd --config <path> --dev [--host <address>]
 */
import { parseArgs } from 'node:util';
import { isMediaError, redactText, redactUrl } from '@svc/media';
import { ConfigError, type DaemonConfig, loadConfig } from './config.js';
import { stderrLogger } from './log.js';
import { type ProbeSummary, probeInput } from './probe.js';
import { type RunningDaemon, serve } from './serve.js';

const USAGE = `usage:
  svcd --config <path> --dev [--host <address>]
  svcd check-config --config <path>
  svcd probe-input <url> --codec <value> [--seconds N] [--json] [--transport tcp|udp]

  --dev runs the direct path for development: video channels served over WebTransport on
  quic_port to any pilot that has the printed URL and certificate hash, with any token (until
  signalling and pilot session tokens exist).

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
  let values: { config?: string; dev?: boolean; host?: string };
  try {
    values = parseArgs({
      args,
      options: { config: { type: 'string' }, dev: { type: 'boolean' }, host: { type: 'string' } },
    }).values;
  } catch (err) {
    console.error(`svcd: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (values.config === undefined) {
    console.error(`svcd: --config <path> is required\n\n${USAGE}`);
    return 2;
  }
  if (values.dev !== true) {
    console.error(
      'svcd: without --dev the daemon connects to the signalling server and verifies pilot session tokens, which this ' +
        'build does not do yet; run with --dev to serve pilots directly for development',
    );
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
  let daemon: RunningDaemon;
  try {
    daemon = await serve({
      config,
      logger,
      dev: true,
      ...(values.host !== undefined && { host: values.host }),
    });
  } catch (err) {
    console.error(`error: ${redactText(err instanceof Error ? err.message : String(err))}`);
    return 1;
  }
  logger.warn(
    {},
    'development mode: any pilot with the URL and certificate hash may connect, with any token',
  );
  const [hash] = daemon.certificateHashes();
  console.log(`dev: pilot URL https://127.0.0.1:${daemon.port}/ certificate sha-256 ${hash}`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await daemon.stop();
  return 0;
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
  ];
  for (const c of config.channels) {
    const where = c.kind === 'command' ? `-> ${redactUrl(c.output)}` : `<- ${redactUrl(c.input)}`;
    const extra =
      c.kind === 'video'
        ? ` ${c.codec} ${c.fps} fps${c.layer.length > 0 ? `, ${c.layer.length} layers` : ''}`
        : '';
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
