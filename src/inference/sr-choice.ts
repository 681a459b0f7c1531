/**
 * Which super-resolution network serves which use: image and video jobs per upscale factor, and
 * the mouth pass of the pro mouth-synchronising model. A setting (MEDIA_WORKER_SR_MODELS) overrides entries of
 * the defaults below; pure and free of heavy imports, so reading settings loads no runtime.
 *
 * Defaults (docs/benchmarks.md, "Real-ESRGAN"): Real-ESRGAN x4plus for images at every factor
 * (x4, then a Lanczos downscale for "2" and "1", as Real-ESRGAN's --outscale does); the compact
 * SRVGG network for video frames and mouths, about 15x cheaper per pixel.
 */

export const SR_USES = ['image', 'video', 'mouth'] as const;
export type SrUse = (typeof SR_USES)[number];

/** Keys `use` or `use:factor` (the more specific wins) to manifest names. */
export type SrModelChoices = Readonly<Record<string, string>>;

export const DEFAULT_SR_MODEL_CHOICES = 'image=realesrgan-x4plus,video=realesrgan-x4fast,mouth=realesrgan-x4fast';

/** The upscale factors a job may ask for (the contract's `upscale_factor`), as they are written. */
export const SR_FACTORS = ['1', '2', '4'] as const;
export type SrFactor = (typeof SR_FACTORS)[number];
const FACTORS: readonly string[] = SR_FACTORS;
const NAME = /^[a-z0-9][a-z0-9.-]*$/;

function entries(text: string): Array<[string, string]> {
  return text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
    .map((item) => {
      const match = /^([a-z]+)(?::(\d))?=(.+)$/.exec(item);
      const [, use, factor, name] = match ?? [];
      if (use === undefined || name === undefined || !(SR_USES as readonly string[]).includes(use)) {
        throw new Error(
          `Expected entries like image=NAME or video:2=NAME (uses: ${SR_USES.join(', ')}) but received ${JSON.stringify(item)}`,
        );
      }
      if (factor !== undefined && (use === 'mouth' || !FACTORS.includes(factor))) {
        throw new Error(
          `Expected a factor of ${FACTORS.join(', ')} on an image or video entry but received ${JSON.stringify(item)}`,
        );
      }
      if (!NAME.test(name))
        throw new Error(
          `Expected a model name of lower-case letters, digits, dots and dashes but received ${JSON.stringify(name)}`,
        );
      return [factor === undefined ? use : `${use}:${factor}`, name];
    });
}

/** The defaults with `text`'s entries on top. */
export function parseSrModelChoices(text: string): SrModelChoices {
  return Object.fromEntries([...entries(DEFAULT_SR_MODEL_CHOICES), ...entries(text)]);
}

export function chooseSrModel(choices: SrModelChoices, use: SrUse, factor: SrFactor): string {
  const name = choices[`${use}:${factor}`] ?? choices[use] ?? parseSrModelChoices('')[use];
  if (name === undefined) throw new Error(`Expected a super-resolution model for ${use} but none is configured`);
  return name;
}
