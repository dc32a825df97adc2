import { createLogger } from '@svc/runtime/node';
import { isCloudConfigError } from './config.js';
import { isDatabaseError } from './db/index.js';
import { isIdentityError } from './identity/index.js';
import { type RunningCloud, startCloud } from './server.js';

/**
 * `svc-cloud`: configuration from the environment (see the README), then serve until a signal.
 * stdout carries the command's own output (help, the address it listens on); the log goes to
 * stderr through the runtime logger.
 */
async function main(): Promise<number> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(
      'svc-cloud: the fleet teleoperation cloud service.\n' +
        'Configured by environment variables (SVC_*, DATABASE_URL); see docs/cloud.md.\n' +
        'With none set it listens on http://127.0.0.1:8080, keeps its data in ./svc-data and serves a development login.\n',
    );
    return 0;
  }
  let cloud: RunningCloud;
  try {
    cloud = await startCloud(process.env);
  } catch (err) {
    // A setting to fix: the message names it (and never holds a secret), for a person to read.
    if (
      isCloudConfigError(err) ||
      isDatabaseError(err) ||
      isIdentityError(err, 'dev-state-corrupt') ||
      isIdentityError(err, 'dev-state-unavailable')
    ) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
  process.stdout.write(`svc-cloud listening on ${cloud.address} (public URL ${cloud.config.publicUrl})\n`);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  cloud.log.info({ signal }, 'svc-cloud stopping');
  await cloud.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    // Before the service's own logger exists, or after it failed: a logger of its own.
    createLogger({ name: 'svc-cloud' }).fatal({ err }, 'svc-cloud failed');
    process.exit(1);
  },
);
