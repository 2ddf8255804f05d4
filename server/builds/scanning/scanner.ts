import type { ScanFinding } from './findings.js';

/** What one scan looks at: the artifact as uploaded, and the files unpacked from it when it is an archive. */
export interface ScanSubject {
  artifact: string;
  /** Absolute paths. */
  unpacked: string[];
  /** How a file is named in a finding: its path inside the archive, never a server path. */
  describe(file: string): string;
}

/**
 * A malware scanner. Answers a finding, or null for clean; throws when it could not scan (a daemon
 * down), which retries the build's job rather than passing the artifact unscanned.
 */
export interface Scanner {
  name: string;
  scan(subject: ScanSubject, signal: AbortSignal): Promise<ScanFinding | null>;
}

/** Runs every scanner in order; the first finding wins. */
export async function scanAll(scanners: Scanner[], subject: ScanSubject, signal: AbortSignal): Promise<ScanFinding | null> {
  for (const scanner of scanners) {
    signal.throwIfAborted();
    const finding = await scanner.scan(subject, signal);
    if (finding) return finding;
  }
  return null;
}
