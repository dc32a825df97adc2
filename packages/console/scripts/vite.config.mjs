/**
 * Vite's configuration of the console (a React app under `src/console/`), shared by the build
 * (`build.mjs`) and the development server (`npx vite --config packages/console/scripts/vite.config.mjs`,
 * which proxies the API to a running svc-cloud, `SVC_CLOUD_URL`, default http://127.0.0.1:8080).
 *
 * Workspace packages are read from their TypeScript sources (the `source` export condition), as
 * the rest of the repository does. The page lives at `/console/` on svc-cloud; its files are
 * referenced relative to it, and the app routes inside the URL fragment, so one `index.html`
 * serves every page.
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { defaultClientConditions } from 'vite';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The configuration; `build.outDir` is the caller's. */
export function consoleViteConfig() {
  const cloud = process.env.SVC_CLOUD_URL ?? 'http://127.0.0.1:8080';
  return {
    root: join(packageDir, 'src/console'),
    base: './',
    plugins: [react()],
    resolve: { conditions: ['source', ...defaultClientConditions] },
    build: {
      target: 'es2022',
      assetsDir: 'assets',
      // Pages a role never opens (the pilot, the audit log) load their code when opened.
      chunkSizeWarningLimit: 800,
      sourcemap: false,
    },
    server: {
      proxy: { '/api': cloud, '/dev-oidc': cloud, '/ws': { target: cloud, ws: true } },
    },
  };
}

export default consoleViteConfig();
