/**
 * The console's entry: reads the console configuration, finishes a login when this load is the
 * identity provider's answer, then renders the app.
 */
import '@mantine/core/styles.css';
import '@mantine/notifications/styles.css';
import { MantineProvider } from '@mantine/core';
import { Notifications } from '@mantine/notifications';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiProblem } from './api/client.js';
import { App } from './app.js';
import { SessionProvider } from './auth.js';
import { acceptAfterSignIn } from './pages/invite.js';
import { showOnSignIn } from './pages/sign-in.js';
import { createUserManager, fetchConsoleConfig, loadSession } from './session.js';

const root = createRoot(document.getElementById('root') as HTMLElement);

const queries = new QueryClient({
  defaultOptions: {
    queries: {
      // A refusal will not change by asking again; a network error may.
      retry: (count, error) =>
        !(error instanceof ApiProblem && error.status >= 400 && error.status < 500) && count < 2,
      refetchOnWindowFocus: false,
    },
  },
});

async function start(): Promise<void> {
  const config = await fetchConsoleConfig();
  const manager = createUserManager(config);
  const loaded = await loadSession(manager);
  if (loaded.kind === 'refused') showOnSignIn(loaded.message);
  if (loaded.kind === 'signed-in' && loaded.state?.invitationToken !== undefined) {
    acceptAfterSignIn(loaded.state.invitationToken);
  }
  root.render(
    <StrictMode>
      <MantineProvider>
        <Notifications position="top-right" />
        <QueryClientProvider client={queries}>
          <SessionProvider
            config={config}
            manager={manager}
            initialUser={loaded.kind === 'signed-in' ? loaded.user : null}
          >
            <App />
          </SessionProvider>
        </QueryClientProvider>
      </MantineProvider>
    </StrictMode>,
  );
}

start().catch((err: unknown) => {
  const text = document.createElement('p');
  text.setAttribute('role', 'alert');
  text.style.cssText = 'font-family: system-ui, sans-serif; margin: 2rem; color: #a31919';
  text.textContent = `The console could not start: ${err instanceof Error ? err.message : String(err)}`;
  document.getElementById('root')?.replaceChildren(text);
});
