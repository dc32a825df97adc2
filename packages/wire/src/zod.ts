/**
 * The one zod every schema of this package is built with. In a page, `jitless`: zod would
 * otherwise probe `new Function` when the first object schema is built, which a page whose
 * Content-Security-Policy allows no `'unsafe-eval'` (the pilot page allows only
 * `'wasm-unsafe-eval'`) reports as a violation; interpreted parsing is fast enough for control
 * lines and signalling messages. In Node (the daemon, svc-cloud, whose API shares this zod) the
 * compiled parsers stay.
 */
import { z } from 'zod';

if (typeof document !== 'undefined') z.config({ jitless: true });

export { z };
