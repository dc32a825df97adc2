import { CloudConfigError } from './config.js';
import { isDatabaseError } from './db/index.js';
import { startCloud } from './server.js';

/** `svc-cloud`: configuration from the environment (see the README), then serve until a signal. */
async function main(): Promise<number> {
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(
      'svc-cloud: the fleet teleoperation cloud service.\n' +
        'Configured by environment variables (SVC_*, DATABASE_URL); see docs/cloud.md.\n' +
        'With none set it listens on http://127.0.0.1:8080, keeps its data in ./svc-data and serves a development login.\n',
    );
    return 0;
  }
  let cloud: Awaited<ReturnType<typeof startCloud>>;
  try {
    cloud = await startCloud(process.env);
  } catch (err) {
    if (err instanceof CloudConfigError || isDatabaseError(err)) {
      process.stderr.write(`${err.message}\n`);
      return 2;
    }
    throw err;
  }
  process.stdout.write(`svc-cloud listening on ${cloud.address} (public URL ${cloud.config.publicUrl})\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await cloud.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`svc-cloud failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
