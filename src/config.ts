/**
 * Assembles the settings of every process from the rooms that declare them. Each setting (its
 * environment variable, zod schema, default and doc) lives in the settings.ts of the folder that
 * uses it, a kind's in its kind's room; here they are only put together: `SETTINGS`, the pipelines'
 * and the command line's (every command reads them), and `SETTINGS_SECTIONS`, every table by
 * process (the daemon's worker/settings.ts includes the protocol's, the gateway's, tracing's). The
 * settings reference is printed from the sections by `media-worker config --reference`, grouped by
 * process and room, and written into docs/configuration.md by `npm run docs:config`. A bad value
 * fails at start with a message that names the variable, never deep inside a job. The names follow
 * one convention (docs/settings.md).
 */
import os from 'node:os';
import { GATEWAY_SETTINGS, gatewaySettingsFromEnv, gatewaySettingsReference } from './gateway/settings.js';
import { INFERENCE_SETTINGS } from './inference/settings.js';
import { JOBS_SETTINGS } from './jobs/settings.js';
import { KIND_SETTINGS, KIND_SETTINGS_CHECKS, KIND_SETTINGS_GROUPS } from './jobs/index.js';
import { LOGGING_SETTINGS } from './logging/settings.js';
import { MEDIA_SETTINGS } from './media/settings.js';
import { PACKAGE_ROOT } from './paths.js';
import {
  settingsReader,
  SettingsError,
  tableSchema,
  unknownSettings,
  type SettingsGroup,
  type SettingsOf,
  type SettingsSection,
  type UnknownSetting,
} from './settings-table.js';
import { TELEMETRY_SETTINGS, telemetrySettingsFromEnv, telemetrySettingsReference } from './telemetry/settings.js';
import { VIDEO_SETTINGS } from './video/settings.js';
import { WORKER_SETTINGS, workerSettingsFromEnv, workerSettingsReference } from './worker/settings.js';

export { LOG_LEVELS } from './logging/settings.js';

/** The rooms of the pipelines' settings, in the order of the settings reference (docs/configuration.md). */
export const PIPELINE_GROUPS: readonly SettingsGroup[] = [
  { title: 'Logging (`src/logging/settings.ts`)', table: LOGGING_SETTINGS },
  { title: 'Media: ffmpeg, temporary files, downloads (`src/media/settings.ts`)', table: MEDIA_SETTINGS },
  { title: 'Inference: models, providers, devices (`src/inference/settings.ts`)', table: INFERENCE_SETTINGS },
  { title: 'Video encoding (`src/video/settings.ts`)', table: VIDEO_SETTINGS },
  { title: 'Quotes: cost estimate, video inputs (`src/jobs/settings.ts`)', table: JOBS_SETTINGS },
  ...KIND_SETTINGS_GROUPS,
];

/** The pipelines' and the command line's settings: the rooms' rows side by side (a test checks no key repeats). */
export const SETTINGS = {
  ...LOGGING_SETTINGS,
  ...MEDIA_SETTINGS,
  ...INFERENCE_SETTINGS,
  ...VIDEO_SETTINGS,
  ...JOBS_SETTINGS,
  ...KIND_SETTINGS,
} as const;

export type SettingKey = keyof typeof SETTINGS;
export type Config = SettingsOf<typeof SETTINGS>;

export class ConfigError extends SettingsError {}

/** The table's schema with the kinds' checks across their rows (jobs/kinds.ts KIND_SETTINGS_CHECKS). */
const schema = tableSchema(SETTINGS).superRefine((values, ctx) => {
  for (const check of KIND_SETTINGS_CHECKS)
    for (const problem of check(values))
      ctx.addIssue({ code: 'custom', path: [problem.key], message: problem.message });
});

const reader = settingsReader(
  SETTINGS,
  schema,
  ConfigError,
  (value) =>
    value.startsWith(PACKAGE_ROOT)
      ? `<package>${value.slice(PACKAGE_ROOT.length)}`
      : value === os.tmpdir()
        ? '<os tmpdir>'
        : value,
  PIPELINE_GROUPS,
);

/**
 * Reads every setting from `env` (process.env by default). `overrides` take precedence and use the
 * same string spelling as the environment, so CLI flags go through the same schemas.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Record<SettingKey, string>> = {},
): Config {
  return reader.fromEnv(env, overrides);
}

/** Every settings table of the program, one section per process (settings-table.ts, SettingsSection). */
export const SETTINGS_SECTIONS: readonly SettingsSection[] = [
  {
    key: 'pipelines',
    title: 'Pipelines and command line',
    table: SETTINGS,
    load: loadConfig,
    reference: configReference,
  },
  {
    key: 'daemon',
    title: 'Daemon (`media-worker serve`)',
    table: WORKER_SETTINGS,
    load: (env) => workerSettingsFromEnv(env),
    reference: workerSettingsReference,
  },
  {
    key: 'gateway',
    title:
      "Gateway (`media-worker gateway`; also reads the protocol's NATS_*, stream names, RESULTS_DIR and RESULTS_BASE_URL, listed with the daemon)",
    table: GATEWAY_SETTINGS,
    load: (env) => gatewaySettingsFromEnv(env),
    reference: gatewaySettingsReference,
  },
  {
    key: 'tracing',
    title: 'Tracing (OpenTelemetry\'s own variables, read by `serve` and `gateway`; docs/operations.md, "Tracing")',
    table: TELEMETRY_SETTINGS,
    load: (env) => telemetrySettingsFromEnv(env),
    reference: telemetrySettingsReference,
  },
];

/** Every environment variable some setting reads. */
export function knownSettingNames(): string[] {
  return SETTINGS_SECTIONS.flatMap((section) => Object.values(section.table).map((spec) => spec.env));
}

/** Variables with a project prefix (MEDIA_WORKER_, WORKER_, NATS_, ...) that no setting reads. */
export function findUnknownSettings(env: NodeJS.ProcessEnv = process.env): UnknownSetting[] {
  const retired = Object.assign({}, ...PIPELINE_GROUPS.map((group) => group.retired ?? {})) as Record<string, string>;
  return unknownSettings(env, knownSettingNames(), retired);
}

/** Markdown tables of every setting, by process and room, for docs/configuration.md and `config --reference`. */
export function allSettingsReference(): string {
  return SETTINGS_SECTIONS.map((section) => `### ${section.title}\n\n${section.reference()}`).join('\n\n');
}

/** Markdown tables of the pipeline settings, by room. */
export function configReference(): string {
  return reader.reference();
}
