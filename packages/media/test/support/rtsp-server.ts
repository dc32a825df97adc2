import { type RunningRtspServer, startRtspServer } from '@svc/testkit';
import { afterAll, beforeAll } from 'vitest';

/**
 * Runs the GStreamer RTSP server with one mount per codec (`/h264`, `/h265`, `/mjpeg`) for the
 * tests of the calling `describe` block: started in its `beforeAll`, stopped in its `afterAll`.
 * Returns a getter for the running server, to call inside the tests.
 */
export function useCodecRtspServer(): () => RunningRtspServer {
  let server: RunningRtspServer | undefined;
  beforeAll(async () => {
    server = await startRtspServer({
      mounts: [
        { path: '/h264', codec: 'h264' },
        { path: '/h265', codec: 'h265' },
        { path: '/mjpeg', codec: 'mjpeg' },
      ],
    });
  });
  afterAll(async () => {
    await server?.stop();
  });
  return () => {
    if (server === undefined) throw new Error('the codec RTSP server is not running (outside a test?)');
    return server;
  };
}
