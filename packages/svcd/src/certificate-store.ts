import { createHash, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from '@svc/runtime';
import { writePrivateFile } from '@svc/runtime/node';
import type { CertificateMaterial } from '@svc/transport';

/**
 * Where the daemon keeps its current TLS certificate between runs: next to the Ed25519 credential,
 * mode 0600. Reusing it across a restart lets pilots that pinned its hash reconnect at once.
 */
export function certificatePath(credentialPath: string): string {
  return `${credentialPath}.tls.json`;
}

/** The saved certificate, or `undefined` when there is none or it cannot be used (logged). */
export async function loadCertificate(
  file: string,
  logger: Logger,
): Promise<CertificateMaterial | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      logger.warn({ file, err: String(err) }, 'cannot read the saved certificate; making a new one');
    return undefined;
  }
  try {
    const { certPem, keyPem } = JSON.parse(text) as { certPem: string; keyPem: string };
    const cert = new X509Certificate(certPem);
    return {
      certPem,
      keyPem,
      sha256: new Uint8Array(createHash('sha256').update(cert.raw).digest()),
      notBefore: new Date(cert.validFrom),
      notAfter: new Date(cert.validTo),
    };
  } catch (err) {
    logger.warn({ file, err: String(err) }, 'the saved certificate is unreadable; making a new one');
    return undefined;
  }
}

/** Saves `material` atomically with mode 0600 (the private key is in it). */
export async function saveCertificate(file: string, material: CertificateMaterial): Promise<void> {
  await writePrivateFile(file, JSON.stringify({ certPem: material.certPem, keyPem: material.keyPem }));
}
