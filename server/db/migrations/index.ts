import type { Migration } from '../migration.js';
import { foundation } from './001_foundation.js';
import { licensing } from './002_licensing.js';
import { deviceSlots } from './003_device_slots.js';
import { builds } from './004_builds.js';
import { updates } from './005_updates.js';
import { emailAndFees } from './007_email_and_fees.js';
import { payments } from './008_payments.js';
import { usedLoginChallenges } from './009_used_login_challenges.js';
import { paymentLinks } from './010_payment_links.js';
import { developerEmails } from './011_developer_emails.js';
import { licenseSubscriptions } from './012_license_subscriptions.js';
import { redemptionAndMarketplace } from './013_redemption_and_marketplace.js';
import { entitlementWebhook } from './014_entitlement_webhook.js';
import { portalSessions } from './015_portal_sessions.js';
import { paymentConnectStates } from './016_payment_connect_states.js';
import { twoFactorAttempts } from './017_two_factor_attempts.js';
import { apiKeyScopesAndPasswordReset } from './018_api_key_scopes_and_password_reset.js';
import { downloadBytes } from './019_download_bytes.js';
import { uploadSessions } from './020_upload_sessions.js';
import { tenantFairnessAndQuotas } from './021_tenant_fairness_and_quotas.js';
import { launcherArchiveFormat } from './024_launcher_archive_format.js';
import { licenseBoundEncryption } from './022_license_bound_encryption.js';
import { buildEntry } from './023_build_entry.js';
import { deviceFingerprintComponents } from './026_device_fingerprint_components.js';
import { updateInstallFailures } from './025_update_install_failures.js';
import { developerDeactivation } from './034_developer_deactivation.js';
import { deviceRunningBuild } from './028_device_running_build.js';
import { billingSubscriptionId } from './035_billing_subscription_id.js';
import { deviceDeactivations } from './029_device_deactivations.js';
import { floatingLicenses } from './030_floating_licenses.js';
import { licenseMeters } from './031_license_meters.js';
import { soldSeatModels } from './032_sold_seat_models.js';
import { devicePreviousFingerprints } from './033_device_previous_fingerprints.js';
import { soldMeters } from './036_sold_meters.js';
import { uploadPartKeys } from './037_upload_part_keys.js';
import { pendingFeeIndex } from './038_pending_fee_index.js';
import { meterUsagePeriod } from './039_meter_usage_period.js';
import { trialStartComponents } from './040_trial_start_components.js';

/** Every migration, in the order it applies. Append; never reorder or edit an applied one. */
export const migrations: Migration[] = [
  foundation,
  licensing,
  deviceSlots,
  builds,
  updates,
  emailAndFees,
  payments,
  usedLoginChallenges,
  paymentLinks,
  developerEmails,
  licenseSubscriptions,
  redemptionAndMarketplace,
  entitlementWebhook,
  portalSessions,
  paymentConnectStates,
  twoFactorAttempts,
  apiKeyScopesAndPasswordReset,
  downloadBytes,
  uploadSessions,
  tenantFairnessAndQuotas,
  licenseBoundEncryption,
  buildEntry,
  launcherArchiveFormat,
  deviceFingerprintComponents,
  updateInstallFailures,
  developerDeactivation,
  deviceRunningBuild,
  billingSubscriptionId,
  deviceDeactivations,
  floatingLicenses,
  licenseMeters,
  soldSeatModels,
  devicePreviousFingerprints,
  soldMeters,
  uploadPartKeys,
  pendingFeeIndex,
  meterUsagePeriod,
  trialStartComponents,
];
