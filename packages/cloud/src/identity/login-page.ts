/** A user the development identity provider knows (and lists on its login page). */
export interface DevUser {
  /** Stable subject identifier, the `sub` of every token. */
  sub: string;
  email: string;
  emailVerified: boolean;
  /** Values of the group claim (see `groupClaim`). */
  groups?: readonly string[] | undefined;
  /** Display name, the `name` claim. */
  name?: string | undefined;
}

/** What the login page shows. */
export interface LoginPageInput {
  /** Where both forms post to: the interaction's own URL. */
  action: string;
  users: readonly DevUser[];
  /** Whether the "type a name" form is shown. */
  allowTypedNames: boolean;
  /** A problem with the previous submission, shown above the forms. */
  message?: string | undefined;
}

/** Rule for a typed name, after trimming and lowercasing: it becomes part of `sub` and of the email. */
export const TYPED_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/**
 * The development login page: one button per known user and, in dev mode, a field to type any name.
 * Plain HTML, no script. The two are separate forms so that pressing Enter in the text field submits the
 * typed name, not the first user's button.
 */
export function renderLoginPage(input: LoginPageInput): string {
  const action = escapeHtml(input.action);
  const buttons = input.users
    .map((user) => {
      const label = escapeHtml(user.name ?? user.sub);
      const detail = escapeHtml(`${user.email}${user.emailVerified ? '' : ' (not verified)'}`);
      return `<li><button type="submit" name="sub" value="${escapeHtml(user.sub)}">${label} <small>${detail}</small></button></li>`;
    })
    .join('\n');
  const users =
    input.users.length === 0
      ? ''
      : `<form method="post" action="${action}" aria-label="Test users">\n<ul>\n${buttons}\n</ul>\n</form>`;
  const typed = input.allowTypedNames
    ? `<form method="post" action="${action}" aria-label="Any name">
<label for="name">Or type a name</label>
<input id="name" name="name" required maxlength="64" autocomplete="off" autofocus>
<button type="submit">Sign in</button>
</form>`
    : '';
  const message = input.message === undefined ? '' : `<p role="alert">${escapeHtml(input.message)}</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in – svc-cloud development</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 28rem; margin: 3rem auto; padding: 0 1rem; }
ul { list-style: none; padding: 0; }
li { margin: 0.5rem 0; }
button { font: inherit; padding: 0.4rem 0.8rem; }
li button { width: 100%; text-align: left; }
small { color: #555; }
input { font: inherit; padding: 0.3rem; }
[role=alert] { color: #a00; }
</style>
</head>
<body>
<main>
<h1>Sign in</h1>
<p>Development identity provider of svc-cloud. Not for production use.</p>
${message}
${users}
${typed}
</main>
</body>
</html>
`;
}

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
