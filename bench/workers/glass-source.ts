/**
 * The glass source (`../glass-source.ts`) in a process of its own, so a suite can run the camera
 * inside a robot's network namespace (`ip netns exec <robot> node … glass-source.ts <options>`).
 *
 * Argument: the source's options as JSON. To the parent: `{ running: true }` once ffmpeg runs;
 * `{ captured }` (every picture's capture time, epoch ms) after the parent's `{ stop: true }`.
 */
import { type GlassSourceOptions, startGlassSource } from '../glass-source.js';

const options = JSON.parse(process.argv[2] ?? '{}') as GlassSourceOptions;
const source = await startGlassSource(options);
process.send?.({ running: true });
process.on('message', (message: { stop?: boolean }) => {
  if (message.stop !== true) return;
  void source.stop().then(
    () => process.send?.({ captured: source.captured }, () => process.exit(0)),
    (err: unknown) => {
      console.error(String(err));
      process.exit(1);
    },
  );
});
process.on('disconnect', () => {
  void source.stop().finally(() => process.exit(0));
});
