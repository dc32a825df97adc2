// Install step of @svc/udp-batch: builds the native addon with node-gyp (Linux only). A machine
// that cannot build it still installs: the QUIC endpoint then sends with dgram.send and says so.
import { spawnSync } from 'node:child_process';
import process from 'node:process';

if (process.platform !== 'linux') {
  console.warn('@svc/udp-batch: batched UDP sends need Linux; the daemon will use dgram.send');
  process.exit(0);
}
const gyp = process.env.npm_config_node_gyp;
const [command, args] = gyp ? [process.execPath, [gyp, 'rebuild']] : ['node-gyp', ['rebuild']];
const result = spawnSync(command, args, { stdio: 'inherit' });
if (result.status !== 0) {
  console.warn(
    `@svc/udp-batch: building the native addon failed (${result.error?.message ?? `exit ${result.status}`}); ` +
      'the daemon will use dgram.send. Install python3, make and g++, then run `npm rebuild @svc/udp-batch`.',
  );
}
