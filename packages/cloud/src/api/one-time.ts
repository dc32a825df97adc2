/**
 * Where a one-time credential (an invitation, an enrolment token) stands at `now`, in its
 * resource's words for "used" and "still open": used once `usedAt` is set (even past its expiry),
 * else revoked, else expired from `expiresAt` on, else open.
 */
export function oneTimeState<const Used extends string, const Open extends string>(
  credential: { readonly revokedAt: Date | null; readonly expiresAt: Date },
  usedAt: Date | null,
  now: Date,
  words: { readonly used: Used; readonly open: Open },
): Used | 'revoked' | 'expired' | Open {
  if (usedAt !== null) return words.used;
  if (credential.revokedAt !== null) return 'revoked';
  return credential.expiresAt <= now ? 'expired' : words.open;
}
