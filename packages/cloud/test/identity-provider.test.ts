import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOidcProvider, type EmbeddedOidcProvider, OidcVerifier } from '../src/identity/index.js';
import {
  discover,
  login,
  openLoginPage,
  serve,
  startTestProvider,
  TEST_AUDIENCE,
  TEST_CLIENT_ID,
  TEST_REDIRECT_URI,
  TEST_USERS,
  type TestProvider,
} from './support/oidc.js';

/** The values of the `sub` buttons and the names of the text inputs on a login page. */
function controls(html: string): { subs: string[]; inputs: string[]; alert: string | undefined } {
  return {
    subs: [...html.matchAll(/<button type="submit" name="sub" value="([^"]*)"/g)].map((m) => m[1] ?? ''),
    inputs: [...html.matchAll(/<input\b[^>]*\bname="([^"]*)"/g)].map((m) => m[1] ?? ''),
    alert: /<p role="alert">([^<]*)<\/p>/.exec(html)?.[1],
  };
}

function formAction(html: string): string {
  const action = /<form method="post" action="([^"]*)"/.exec(html)?.[1];
  if (action === undefined) throw new Error('no form on the page');
  return action;
}

describe('the development login page', () => {
  let idp: TestProvider;

  beforeAll(async () => {
    idp = await startTestProvider({
      users: [
        ...TEST_USERS,
        { sub: 'user-mallory', email: 'm@example.test', emailVerified: true, name: '<b>M</b>' },
      ],
    });
  });
  afterAll(async () => {
    await idp.close();
  });

  it('lists the known users as buttons and offers a field to type a name', async () => {
    const page = await openLoginPage(idp);

    expect(page.status).toBe(200);
    expect(page.url.pathname).toMatch(/^\/dev-oidc\/interaction\/[^/]+$/);
    expect(formAction(page.html)).toBe(page.url.pathname);
    const { subs, inputs } = controls(page.html);
    expect(subs).toEqual(['user-alice', 'user-bob', 'user-carol', 'user-mallory']);
    expect(inputs).toEqual(['name']);
    expect(page.html).toContain('Alice <small>Alice@Example.test</small>');
    expect(page.html).toContain('carol@example.test (not verified)');
    expect(page.html).toContain('&#60;b&#62;M&#60;/b&#62;');
    expect(page.html).not.toContain('<b>M</b>');
  });

  it('logs in a known user through its button', async () => {
    const { accessToken, idToken } = await idp.login({ sub: 'user-bob' });

    expect(decodeJwt(accessToken).sub).toBe('user-bob');
    expect(decodeJwt(idToken)).toMatchObject({
      sub: 'user-bob',
      email: 'bob@example.test',
      groups: ['operators'],
    });
  });

  it('logs in a typed name as dev-<name> with a verified <name>@example.test', async () => {
    const verifier = new OidcVerifier({ issuer: idp.issuer, audience: idp.audience, clientId: idp.clientId });

    const { accessToken, idToken } = await idp.login({ name: '  Dana ' });

    const { sub } = await verifier.verifyAccessToken(accessToken);
    expect(sub).toBe('dev-dana');
    expect(await verifier.verifyIdToken(idToken, sub)).toMatchObject({
      email: 'dana@example.test',
      emailVerified: true,
    });
    expect(await verifier.verifiedEmail({ sub, accessToken, idToken })).toBe('dana@example.test');
  });

  it("logs in the known user when the typed name is that user's name", async () => {
    const { accessToken } = await idp.login({ name: 'bob' });

    expect(decodeJwt(accessToken).sub).toBe('user-bob');
  });

  it('shows the page again with a message for a name it cannot use, and the same attempt can go on', async () => {
    const page = await openLoginPage(idp);
    const action = new URL(formAction(page.html), page.url).href;

    const refused = await page.jar.follow(action, {
      method: 'POST',
      body: new URLSearchParams({ name: 'no spaces' }),
    });
    expect(refused.status).toBe(400);
    expect(controls(refused.html).alert).toMatch(/type a name/);
    const unknown = await page.jar.follow(action, {
      method: 'POST',
      body: new URLSearchParams({ sub: 'user-eve' }),
    });
    expect(unknown.status).toBe(400);

    const accepted = await page.jar.follow(action, {
      method: 'POST',
      body: new URLSearchParams({ name: 'erin' }),
    });
    expect(accepted.kind).toBe('callback');
    expect(accepted.url.searchParams.get('code')).toBeTruthy();
  });

  it('refuses a sign-in page without the interaction cookie', async () => {
    const page = await openLoginPage(idp);

    const response = await fetch(page.url);

    expect(response.status).toBe(400);
    expect(controls(await response.text()).alert).toMatch(/unknown or has expired/);
  });
});

describe('the login page outside dev mode', () => {
  it('offers only the known users and refuses typed names', async () => {
    const idp = await startTestProvider({ allowTypedNames: false });
    try {
      const page = await openLoginPage(idp);
      expect(controls(page.html).inputs).toEqual([]);

      const action = new URL(formAction(page.html), page.url).href;
      const refused = await page.jar.follow(action, {
        method: 'POST',
        body: new URLSearchParams({ name: 'dana' }),
      });

      expect(refused.status).toBe(400);
      await expect(idp.login({ name: 'dana' })).rejects.toThrow(/offers no way/);
    } finally {
      await idp.close();
    }
  });
});

/** Logs in through a provider mounted at `issuer`, and verifies the tokens. */
async function loginAndVerify(issuer: string): Promise<string> {
  const endpoints = await discover(issuer);
  const tokens = await login(
    {
      ...endpoints,
      clientId: TEST_CLIENT_ID,
      redirectUri: TEST_REDIRECT_URI,
      audience: TEST_AUDIENCE,
    },
    { sub: 'user-alice' },
  );
  const verifier = new OidcVerifier({ issuer, audience: TEST_AUDIENCE, clientId: TEST_CLIENT_ID });
  const { sub } = await verifier.verifyAccessToken(tokens.accessToken);
  const email = await verifier.verifiedEmail({ sub, ...tokens });
  return `${sub} ${email}`;
}

/** Server errors of the providers made by {@link devProvider}; each test expects none. */
const serverErrors: Error[] = [];
afterEach(() => {
  expect(serverErrors.splice(0)).toEqual([]);
});

function devProvider(issuer: string): EmbeddedOidcProvider {
  return createOidcProvider({
    issuer,
    audience: TEST_AUDIENCE,
    clientId: TEST_CLIENT_ID,
    redirectUris: [TEST_REDIRECT_URI],
    users: TEST_USERS,
    allowTypedNames: true,
    onServerError: (err) => serverErrors.push(err),
  });
}

describe('mounting the provider under /dev-oidc', () => {
  it('works in a bare node:http server next to other routes', async () => {
    let dev: EmbeddedOidcProvider | undefined;
    const server = await serve((req, res) => {
      const url = req.url ?? '/';
      if (dev !== undefined && (url === '/dev-oidc' || /^\/dev-oidc[/?]/.test(url))) {
        dev.handler(req, res);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`app ${url}`);
    });
    try {
      // The issuer must be the address the server really has, so the provider comes after listen().
      const issuer = `${server.origin}/dev-oidc`;
      dev = devProvider(issuer);

      const endpoints = await discover(issuer);
      expect(endpoints.issuer).toBe(issuer);
      for (const uri of Object.values(endpoints)) expect(uri.startsWith(issuer)).toBe(true);
      expect(await loginAndVerify(issuer)).toBe('user-alice alice@example.test');
      expect(await (await fetch(`${server.origin}/api/v1/me`)).text()).toBe('app /api/v1/me');
      expect(await (await fetch(`${server.origin}/dev-oidcx/jwks`)).text()).toBe('app /dev-oidcx/jwks');
    } finally {
      await server.close();
    }
  });

  it('works in fastify, handing over the raw request before fastify reads the body', async () => {
    const app = Fastify();
    let dev: EmbeddedOidcProvider | undefined;
    app.route({
      method: ['GET', 'POST', 'OPTIONS'],
      url: '/dev-oidc/*',
      onRequest: (request, reply, done) => {
        if (dev === undefined) {
          done();
          return;
        }
        reply.hijack();
        dev.handler(request.raw, reply.raw);
        done();
      },
      handler: async (_request, reply) => reply.code(503).send(),
    });
    app.get('/api/v1/ping', async () => ({ ok: true }));
    try {
      await app.listen({ host: '127.0.0.1', port: 0 });
      const issuer = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/dev-oidc`;
      dev = devProvider(issuer);

      expect(await loginAndVerify(issuer)).toBe('user-alice alice@example.test');
      expect(await (await fetch(`${issuer.replace('/dev-oidc', '')}/api/v1/ping`)).json()).toEqual({
        ok: true,
      });
    } finally {
      await app.close();
    }
  });

  it('answers 404 for a path outside the mount path when called directly', async () => {
    const dev = devProvider('http://127.0.0.1:9/dev-oidc');
    const server = await serve(dev.handler);
    try {
      const response = await fetch(`${server.origin}/elsewhere/.well-known/openid-configuration`);
      await response.body?.cancel();

      expect(response.status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe('rotateKeys', () => {
  it('publishes the new key first, keeps the old one, signs with the new one, and keeps sign-ins going', async () => {
    const idp = await startTestProvider();
    try {
      const oldKid = decodeProtectedHeader((await idp.login({ sub: 'user-bob' })).idToken).kid;
      const page = await openLoginPage(idp);

      const newKid = idp.rotateKeys();

      const jwks = (await (await fetch(idp.jwksUri)).json()) as { keys: { kid: string; d?: string }[] };
      expect(jwks.keys.map((k) => k.kid)).toEqual([newKid, oldKid]);
      expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
      expect(idp.provider.publicKeys().map((k) => k.kid)).toEqual([newKid, oldKid]);
      const action = new URL(formAction(page.html), page.url).href;
      const resumed = await page.jar.follow(action, {
        method: 'POST',
        body: new URLSearchParams({ sub: 'user-bob' }),
      });
      expect(resumed.kind).toBe('callback');
      const { accessToken, idToken } = await idp.login({ sub: 'user-bob' });
      expect(decodeProtectedHeader(accessToken).kid).toBe(newKid);
      expect(decodeProtectedHeader(idToken).kid).toBe(newKid);
    } finally {
      await idp.close();
    }
  });
});
