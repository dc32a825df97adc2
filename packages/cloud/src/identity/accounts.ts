import { type DevUser, TYPED_NAME } from './login-page.js';

/** Prefix of the subject of every person the development provider makes up (typed names, invitees). */
const SUB_PREFIX = 'dev-';
const TYPED_EMAIL_DOMAIN = 'example.test';
/** An email address as far as the development provider cares: one `@`, no spaces, at most 254 characters. */
const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,189}$/;

/** Trims and lowercases an email address; `undefined` when it is not one. */
export function normalizeEmail(text: string): string | undefined {
  const email = text.trim().toLowerCase();
  return EMAIL.test(email) ? email : undefined;
}

/**
 * The people a development provider can sign in: its known users (buttons on the login page), typed
 * names (dev mode: `sub` `dev-<name>`, verified email `<name>@example.test`) and invitees signed in by
 * a one-time token (`sub` `dev-<email>`). Invitees and typed names are not stored anywhere: their
 * subject says who they are, so they are the same person after a restart.
 */
export class DevAccounts {
  readonly users: readonly DevUser[];
  readonly allowTypedNames: boolean;

  constructor(users: readonly DevUser[], allowTypedNames: boolean) {
    this.users = users;
    this.allowTypedNames = allowTypedNames;
  }

  /**
   * The person with subject `sub`, or `undefined`. Only subjects this provider hands out resolve, and
   * only through a sign-in (the login page or a one-time token) does anyone get one.
   */
  find(sub: string): DevUser | undefined {
    const known = this.users.find((user) => user.sub === sub);
    if (known !== undefined || !sub.startsWith(SUB_PREFIX)) return known;
    const rest = sub.slice(SUB_PREFIX.length);
    if (rest.includes('@')) return normalizeEmail(rest) === rest ? invitee(rest) : undefined;
    return this.allowTypedNames && TYPED_NAME.test(rest) ? typedUser(rest) : undefined;
  }

  /**
   * The account a login form names: a known user's `sub` button, or a typed name (dev mode). A typed
   * name equal to a known user's name or sub logs in that user.
   */
  chooseFromForm(form: URLSearchParams): string | undefined {
    const sub = form.get('sub');
    if (sub !== null) return this.users.find((user) => user.sub === sub)?.sub;
    const typed = form.get('name');
    if (!this.allowTypedNames || typed === null) return undefined;
    const name = typed.trim().toLowerCase();
    if (!TYPED_NAME.test(name)) return undefined;
    const known = this.users.find(
      (user) => user.sub.toLowerCase() === name || user.name?.toLowerCase() === name,
    );
    return known?.sub ?? typedUser(name).sub;
  }

  /**
   * The subject a person with the verified (normalized) `email` signs in as: the known user with that
   * verified email, else the typed name it is the address of (dev mode), else the invitee `dev-<email>`.
   */
  subjectForEmail(email: string): string {
    const known = this.users.find((user) => user.emailVerified && user.email.toLowerCase() === email);
    if (known !== undefined) return known.sub;
    const [local = '', domain] = email.split('@');
    if (this.allowTypedNames && domain === TYPED_EMAIL_DOMAIN && TYPED_NAME.test(local)) {
      return typedUser(local).sub;
    }
    return invitee(email).sub;
  }
}

/** The synthetic user of a typed name. */
function typedUser(name: string): DevUser {
  return {
    sub: `${SUB_PREFIX}${name}`,
    email: `${name}@${TYPED_EMAIL_DOMAIN}`,
    emailVerified: true,
    name,
  };
}

/** The synthetic user an invitation's one-time token signed in: its email is verified by the token. */
function invitee(email: string): DevUser {
  return { sub: `${SUB_PREFIX}${email}`, email, emailVerified: true, name: email.split('@')[0] };
}

/** The claims of `user` for ID tokens and userinfo. */
export function userClaims(user: DevUser, groupClaim: string): { sub: string; [claim: string]: unknown } {
  const claims: { sub: string; [claim: string]: unknown } = {
    sub: user.sub,
    email: user.email,
    email_verified: user.emailVerified,
  };
  if (user.name !== undefined) claims.name = user.name;
  if (user.groups !== undefined) claims[groupClaim] = [...user.groups];
  return claims;
}
