import type { Migration } from '../migration.js';

/**
 * A computer's trial starts keep its fingerprint components (and its machine id's hash, indexed),
 * so a computer whose fingerprint changed (run as root, a new network card) is still the computer
 * that used its trial, by the device-matching rule. Starts recorded before keep matching by their
 * fingerprint alone. Only adds.
 */
export const trialStartComponents: Migration = {
  name: '040_trial_start_components',
  async up(db) {
    await db.raw(`
      ALTER TABLE trial_starts ADD COLUMN machine_id_hash text, ADD COLUMN component_hashes jsonb;
      CREATE INDEX trial_starts_by_machine ON trial_starts (app_id, machine_id_hash) WHERE machine_id_hash IS NOT NULL;
    `);
  },
  async down(db) {
    await db.raw(`
      DROP INDEX trial_starts_by_machine;
      ALTER TABLE trial_starts DROP COLUMN machine_id_hash, DROP COLUMN component_hashes;
    `);
  },
};
