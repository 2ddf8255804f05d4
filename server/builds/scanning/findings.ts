/** `scan_status` values: one closed list. PENDING until the build's job has scanned it. */
export const SCAN_STATUSES = ['PENDING', 'CLEAN', 'INFECTED', 'REJECTED'] as const;
export type ScanStatus = (typeof SCAN_STATUSES)[number];

/**
 * Why an artifact is refused: INFECTED for malware signatures, REJECTED for archives that are
 * dangerous to unpack (paths leaving the archive, links, bombs). The build then FAILS with `reason`.
 */
export interface ScanFinding {
  scan_status: Extract<ScanStatus, 'INFECTED' | 'REJECTED'>;
  reason: string;
}

/** Thrown where a finding ends the work at once (unpacking); carried to the build as data. */
export class ScanRefusal extends Error {
  constructor(readonly finding: ScanFinding) {
    super(finding.reason);
  }
}

export const rejected = (reason: string) => new ScanRefusal({ scan_status: 'REJECTED', reason });
