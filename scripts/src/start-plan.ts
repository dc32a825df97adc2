/**
 * What `npm start` runs, decided from its arguments and environment before anything starts (no
 * I/O): svc-cloud's arguments and environment, and whether the demonstration robot runs.
 *
 * @packageDocumentation
 */

/**
 * svc-cloud settings `npm start` adds when the development identity provider runs (no
 * `SVC_OIDC_ISSUER`) and the variable is not set: every development test user joins one
 * demonstration org with the role its group names (Olivia owner, Alice admin, Bob operator, Vera
 * viewer), and the demo robot belongs to that org. A variable the user sets wins.
 */
export const DEVELOPMENT_DEFAULTS = {
  SVC_PROVISIONING: 'default-org',
  SVC_OIDC_ROLE_CLAIM: 'groups',
  SVC_OIDC_ROLE_MAP: 'owners=owner,admins=admin,operators=operator,viewers=viewer',
  SVC_DEFAULT_ORG_NAME: 'Demonstration',
} as const;

/** The argument that turns the demo robot off. */
export const NO_DEMO_ARGUMENT = '--no-demo';

/** Whether the demo robot runs, and if not, why (for the start banner). */
export type DemoDecision = { readonly on: true } | { readonly on: false; readonly reason: string };

/** What `npm start` runs. */
export interface StartPlan {
  /** svc-cloud's arguments: `npm start`'s, without `--no-demo`. */
  readonly cloudArgs: readonly string[];
  /** svc-cloud's environment. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The development provider runs (no `SVC_OIDC_ISSUER`). */
  readonly development: boolean;
  readonly demo: DemoDecision;
  /** The names of {@link DEVELOPMENT_DEFAULTS} that were applied (the user set none of them). */
  readonly defaultsApplied: readonly string[];
}

/** A variable counts as set when it holds more than blanks, as svc-cloud reads it. */
function isSet(env: Readonly<Record<string, string | undefined>>, name: string): boolean {
  return (env[name] ?? '').trim() !== '';
}

/**
 * Decides what `npm start` runs:
 * - without `SVC_OIDC_ISSUER`, the {@link DEVELOPMENT_DEFAULTS} the user did not set;
 * - the demo robot unless `--no-demo`, `SVC_DEMO=0`, or an external issuer (the demo needs the
 *   development provider; `SVC_DEMO=1` with an issuer is passed on, and svc-cloud refuses it by
 *   name). svc-cloud gets `SVC_DEMO=1` when the demo runs, `SVC_DEMO=0` after `--no-demo`.
 */
export function planStart(
  argv: readonly string[],
  environment: Readonly<Record<string, string | undefined>>,
): StartPlan {
  const cloudArgs = argv.filter((arg) => arg !== NO_DEMO_ARGUMENT);
  const noDemoArgument = cloudArgs.length !== argv.length;
  const env: Record<string, string | undefined> = { ...environment };
  const development = !isSet(env, 'SVC_OIDC_ISSUER');
  const defaultsApplied: string[] = [];
  if (development) {
    for (const [name, value] of Object.entries(DEVELOPMENT_DEFAULTS)) {
      if (isSet(env, name)) continue;
      env[name] = value;
      defaultsApplied.push(name);
    }
  }
  const demoVariable = (env.SVC_DEMO ?? '').trim();
  let demo: DemoDecision;
  if (noDemoArgument) {
    demo = { on: false, reason: `${NO_DEMO_ARGUMENT} was given` };
    env.SVC_DEMO = '0';
  } else if (demoVariable === '0') {
    demo = { on: false, reason: 'SVC_DEMO=0' };
  } else if (demoVariable !== '' && demoVariable !== '1') {
    // svc-cloud names the bad value and stops.
    demo = { on: false, reason: `SVC_DEMO="${demoVariable}" is not 1 or 0` };
  } else if (!development && demoVariable === '') {
    demo = { on: false, reason: 'SVC_OIDC_ISSUER is set (the demo robot needs the development provider)' };
  } else {
    demo = { on: true };
    env.SVC_DEMO = '1';
  }
  return { cloudArgs, env, development, demo, defaultsApplied };
}
