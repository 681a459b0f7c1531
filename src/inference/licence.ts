/**
 * Whether a network's licence lets it serve paying customers, and the line that says so
 * (docs/models.md): `serve` does not pull a kind whose network is known to forbid
 * commercial use unless MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS=1; the one-off commands run it for
 * a person's own use and say its licence. Pure.
 */

export interface LicenceFacts {
  spdx: string;
  commercialUse?: boolean | undefined;
}

/** SPDX identifiers whose terms are known here: these allow commercial use. */
const COMMERCIAL = new Set(['MIT', 'Apache-2.0', 'BSD-2-Clause', 'BSD-3-Clause', 'ISC', 'CC0-1.0', 'CC-BY-4.0']);
/** These forbid it: Wav2Lip's research-only terms ("any form of commercial use is strictly prohibited"). */
const NONCOMMERCIAL = new Set(['LicenseRef-Wav2Lip-research']);

/** true / false, or undefined where neither the manifest nor the identifier says (an adopted network's null licence). */
export function allowsCommercialUse(licence: LicenceFacts | null | undefined): boolean | undefined {
  if (licence === null || licence === undefined) return undefined;
  if (licence.commercialUse !== undefined) return licence.commercialUse;
  if (COMMERCIAL.has(licence.spdx)) return true;
  // Creative Commons' NonCommercial variants (CC-BY-NC-4.0, CC-BY-NC-SA-4.0, ...).
  if (NONCOMMERCIAL.has(licence.spdx) || /-NC(-|$)/.test(licence.spdx)) return false;
  return undefined;
}

/** "yes", "no" or "unknown", as `models list` shows whether a network may be sold. */
export function maySell(licence: LicenceFacts | null | undefined): 'yes' | 'no' | 'unknown' {
  const verdict = allowsCommercialUse(licence);
  return verdict === undefined ? 'unknown' : verdict ? 'yes' : 'no';
}

type NamedNetwork = { name: string; licence: LicenceFacts | null | undefined };

/** Networks a paid service may not run, as one reason (undefined when there is none), naming the setting that overrides it. */
export function noncommercialReason(networks: readonly NamedNetwork[]): string | undefined {
  const named = noncommercialNames(networks);
  return named === undefined
    ? undefined
    : `the licence of ${named} forbids commercial use; not served to paying jobs unless MEDIA_WORKER_ALLOW_NONCOMMERCIAL_MODELS=1`;
}

/** The one line a run of such a network logs: for a person's own use. */
export function noncommercialNotice(networks: readonly NamedNetwork[]): string | undefined {
  const named = noncommercialNames(networks);
  return named === undefined ? undefined : `running ${named} for your own use: its licence forbids commercial use`;
}

/** "wav2lip (LicenseRef-Wav2Lip-research), ...": each network whose licence forbids commercial use, once; undefined when none does. */
function noncommercialNames(networks: readonly NamedNetwork[]): string | undefined {
  const refused = networks.filter((n) => allowsCommercialUse(n.licence) === false);
  if (refused.length === 0) return undefined;
  return [...new Map(refused.map((n) => [n.name, `${n.name} (${n.licence?.spdx ?? 'no licence'})`])).values()].join(
    ', ',
  );
}
