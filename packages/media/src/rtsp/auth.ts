/**
 * RTSP authentication (RFC 2326 uses HTTP's): Basic (RFC 7617) and Digest (RFC 2617, RFC 7616)
 * with MD5 or SHA-256, `qop=auth` or the legacy form without `qop`.
 */
import { createHash, randomBytes } from 'node:crypto';

/** User name and password for a camera, decoded (not percent-encoded). */
export interface RtspCredentials {
  readonly username: string;
  readonly password: string;
}

/** One challenge from a `WWW-Authenticate` header. */
export interface AuthChallenge {
  /** Lower-cased: `basic`, `digest`, ... */
  readonly scheme: string;
  /** Parameters with lower-cased names and unquoted values. */
  readonly params: ReadonlyMap<string, string>;
}

/** Digest algorithms this client computes (RFC 7616 §3.3); the names are case-insensitive. */
const DIGEST_ALGORITHMS = {
  MD5: { hash: 'md5', session: false, rank: 1 },
  'MD5-SESS': { hash: 'md5', session: true, rank: 0 },
  'SHA-256': { hash: 'sha256', session: false, rank: 3 },
  'SHA-256-SESS': { hash: 'sha256', session: true, rank: 2 },
} as const;

/** A Digest algorithm name this client implements, upper-cased. */
export type DigestAlgorithmName = keyof typeof DIGEST_ALGORITHMS;

const TOKEN_CHAR = /[!#$%&'*+.^_`|~0-9A-Za-z-]/;

/**
 * Parses `WWW-Authenticate` values into challenges. One value may hold several challenges
 * (RFC 7235 §4.1):
 *
 * ```text
 * WWW-Authenticate = 1#challenge
 * challenge        = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
 * auth-param       = token BWS "=" BWS ( token / quoted-string )
 * quoted-string    = DQUOTE *( qdtext / "\" any-char ) DQUOTE
 * ```
 *
 * Never throws: what does not parse is skipped (a camera's odd header must not hide a usable
 * challenge next to it).
 */
export function parseAuthenticateHeaders(values: readonly string[]): AuthChallenge[] {
  const challenges: { scheme: string; params: Map<string, string> }[] = [];
  for (const value of values) {
    let current: { scheme: string; params: Map<string, string> } | undefined;
    let pos = 0;
    const skip = (chars: RegExp): void => {
      while (pos < value.length && chars.test(value[pos] ?? '')) pos++;
    };
    const token = (): string => {
      const start = pos;
      skip(TOKEN_CHAR);
      return value.slice(start, pos);
    };
    while (pos < value.length) {
      skip(/[\s,]/);
      const name = token();
      if (name === '') {
        // Not a token where a scheme or parameter name belongs: skip to the next list item.
        const comma = value.indexOf(',', pos);
        pos = comma < 0 ? value.length : comma + 1;
        continue;
      }
      skip(/[ \t]/);
      if (value[pos] === '=' && current !== undefined) {
        pos++;
        if (pos >= value.length || value[pos] === '=' || value[pos] === ',') {
          // token68 (`Negotiate abc==`): no parameter, nothing this client uses.
          skip(/=/);
          continue;
        }
        skip(/[ \t]/);
        let param: string;
        if (value[pos] === '"') {
          pos++;
          param = '';
          while (pos < value.length && value[pos] !== '"') {
            if (value[pos] === '\\') pos++;
            param += value[pos] ?? '';
            pos++;
          }
          pos++;
        } else {
          param = token();
        }
        current.params.set(name.toLowerCase(), param);
      } else if (value[pos] === '=') {
        // A parameter before any scheme, or token68 padding: nothing usable.
        skip(/=/);
      } else {
        current = { scheme: name.toLowerCase(), params: new Map() };
        challenges.push(current);
      }
    }
  }
  return challenges;
}

/** The hash of `data` (UTF-8) as lower-case hex. */
function hashHex(hash: 'md5' | 'sha256', data: string): string {
  return createHash(hash).update(data, 'utf8').digest('hex');
}

/** Inputs of a Digest response computation (RFC 7616 §3.4.1). */
export interface DigestInput {
  readonly algorithm: DigestAlgorithmName;
  readonly username: string;
  readonly password: string;
  readonly realm: string;
  readonly nonce: string;
  readonly method: string;
  readonly uri: string;
  /** With `qop=auth`: the client nonce and the 8-hex-digit nonce count. */
  readonly qop?: { readonly cnonce: string; readonly nc: string };
}

/**
 * Computes the Digest `response` value (RFC 7616 §3.4.1, RFC 2617 §3.2.2.1):
 *
 * ```text
 * A1  = username ":" realm ":" password
 *       (for -sess: H(A1) ":" nonce ":" cnonce)
 * A2  = method ":" uri
 * response = H( H(A1) ":" nonce ":" nc ":" cnonce ":" "auth" ":" H(A2) )   with qop=auth
 * response = H( H(A1) ":" nonce ":" H(A2) )                                without qop (RFC 2069)
 * ```
 */
export function digestResponse(input: DigestInput): string {
  const { hash, session } = DIGEST_ALGORITHMS[input.algorithm];
  let ha1 = hashHex(hash, `${input.username}:${input.realm}:${input.password}`);
  if (session) ha1 = hashHex(hash, `${ha1}:${input.nonce}:${input.qop?.cnonce ?? ''}`);
  const ha2 = hashHex(hash, `${input.method}:${input.uri}`);
  return input.qop === undefined
    ? hashHex(hash, `${ha1}:${input.nonce}:${ha2}`)
    : hashHex(hash, `${ha1}:${input.nonce}:${input.qop.nc}:${input.qop.cnonce}:auth:${ha2}`);
}

/** A quoted-string with `"` and `\` escaped. */
function quoted(value: string): string {
  return `"${value.replace(/["\\]/g, (c) => `\\${c}`)}"`;
}

/** A usable Digest challenge, reduced to what the computation needs. */
interface DigestChallenge {
  readonly algorithm: DigestAlgorithmName;
  /** The algorithm as the server spelled it, echoed back; undefined when it named none. */
  readonly algorithmToken: string | undefined;
  readonly realm: string;
  readonly nonce: string;
  readonly opaque: string | undefined;
  readonly qopAuth: boolean;
}

/** Reads a Digest challenge, or undefined when it lacks a field or asks for what we cannot do. */
function readDigest(challenge: AuthChallenge): DigestChallenge | undefined {
  const realm = challenge.params.get('realm');
  const nonce = challenge.params.get('nonce');
  if (realm === undefined || nonce === undefined) return undefined;
  const algorithmToken = challenge.params.get('algorithm');
  const name = (algorithmToken ?? 'MD5').toUpperCase();
  if (!Object.hasOwn(DIGEST_ALGORITHMS, name)) return undefined;
  const qop = challenge.params.get('qop');
  const qops = qop === undefined ? [] : qop.split(',').map((q) => q.trim().toLowerCase());
  // Only qop=auth is implemented; a challenge offering qop values without "auth" is unusable.
  if (qop !== undefined && !qops.includes('auth')) return undefined;
  const algorithm = name as DigestAlgorithmName;
  if (DIGEST_ALGORITHMS[algorithm].session && qop === undefined) return undefined;
  return {
    algorithm,
    algorithmToken,
    realm,
    nonce,
    opaque: challenge.params.get('opaque'),
    qopAuth: qop !== undefined,
  };
}

/** Options of {@link RtspAuthenticator.fromChallenges}. */
export interface AuthenticatorOptions {
  /** Client nonce source for `qop=auth`; 16 random bytes in hex by default. */
  readonly cnonce?: () => string;
}

/**
 * Answers one server's authentication challenge for every request on a connection: Digest when
 * offered (the strongest algorithm first), else Basic.
 */
export class RtspAuthenticator {
  /** `digest` or `basic`. */
  readonly scheme: 'digest' | 'basic';
  readonly #credentials: RtspCredentials;
  readonly #digest: DigestChallenge | undefined;
  readonly #cnonce: () => string;
  #nonceCount = 0;

  private constructor(
    credentials: RtspCredentials,
    digest: DigestChallenge | undefined,
    cnonce: () => string,
  ) {
    this.scheme = digest === undefined ? 'basic' : 'digest';
    this.#credentials = credentials;
    this.#digest = digest;
    this.#cnonce = cnonce;
  }

  /**
   * Picks the challenge to answer: Digest over Basic (Basic sends the password in clear), and
   * among Digest challenges SHA-256 over MD5. Returns undefined when no challenge is usable.
   */
  static fromChallenges(
    challenges: readonly AuthChallenge[],
    credentials: RtspCredentials,
    options: AuthenticatorOptions = {},
  ): RtspAuthenticator | undefined {
    const cnonce = options.cnonce ?? (() => randomBytes(16).toString('hex'));
    let best: DigestChallenge | undefined;
    for (const challenge of challenges) {
      if (challenge.scheme !== 'digest') continue;
      const digest = readDigest(challenge);
      if (digest === undefined) continue;
      if (
        best === undefined ||
        DIGEST_ALGORITHMS[digest.algorithm].rank > DIGEST_ALGORITHMS[best.algorithm].rank
      ) {
        best = digest;
      }
    }
    if (best !== undefined) return new RtspAuthenticator(credentials, best, cnonce);
    if (challenges.some((c) => c.scheme === 'basic'))
      return new RtspAuthenticator(credentials, undefined, cnonce);
    return undefined;
  }

  /** The `Authorization` header value for a request (Digest counts its uses of the nonce). */
  authorization(method: string, uri: string): string {
    const { username, password } = this.#credentials;
    const digest = this.#digest;
    if (digest === undefined) {
      return `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`;
    }
    const qop = digest.qopAuth
      ? { cnonce: this.#cnonce(), nc: (++this.#nonceCount).toString(16).padStart(8, '0') }
      : undefined;
    const response = digestResponse({
      algorithm: digest.algorithm,
      username,
      password,
      realm: digest.realm,
      nonce: digest.nonce,
      method,
      uri,
      ...(qop === undefined ? {} : { qop }),
    });
    const parts = [
      `username=${quoted(username)}`,
      `realm=${quoted(digest.realm)}`,
      `nonce=${quoted(digest.nonce)}`,
      `uri=${quoted(uri)}`,
      `response=${quoted(response)}`,
    ];
    if (digest.algorithmToken !== undefined) parts.push(`algorithm=${digest.algorithmToken}`);
    if (digest.opaque !== undefined) parts.push(`opaque=${quoted(digest.opaque)}`);
    if (qop !== undefined) parts.push('qop=auth', `nc=${qop.nc}`, `cnonce=${quoted(qop.cnonce)}`);
    return `Digest ${parts.join(', ')}`;
  }
}
