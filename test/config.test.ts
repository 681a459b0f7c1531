import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('gives the documented defaults on an empty environment', () => {
    const c = loadConfig({});
    expect(c.logLevel).toBe('info');
    expect(c.executionProviders).toEqual(['cpu']);
    expect(c.allowPrivateUrls).toBe(false);
    expect(c.threads).toBe(0);
    expect(c.ffmpegPath).toBeUndefined();
  });

  it.each([
    ['MEDIA_WORKER_EXECUTION_PROVIDERS', 'cuda, CPU', 'executionProviders', ['cuda', 'cpu']],
    ['MEDIA_WORKER_ALLOW_PRIVATE_URLS', 'yes', 'allowPrivateUrls', true],
    ['MEDIA_WORKER_ALLOW_PRIVATE_URLS', '0', 'allowPrivateUrls', false],
    ['MEDIA_WORKER_THREADS', '6', 'threads', 6],
    ['MEDIA_WORKER_MAX_IMAGE_BYTES', '1024', 'maxImageBytes', 1024],
    ['FFMPEG_PATH', '/opt/ffmpeg/bin/ffmpeg', 'ffmpegPath', '/opt/ffmpeg/bin/ffmpeg'],
  ] as const)('reads %s=%s', (env, value, key, expected) => {
    expect(loadConfig({ [env]: value })[key]).toEqual(expected);
  });

  it.each([
    [
      'MEDIA_WORKER_EXECUTION_PROVIDERS',
      'cuda,gpu',
      'Invalid setting MEDIA_WORKER_EXECUTION_PROVIDERS: Expected a comma-separated list of cpu, cuda, tensorrt, webgpu but received "cuda,gpu"',
    ],
    [
      'MEDIA_WORKER_THREADS',
      'many',
      'Invalid setting MEDIA_WORKER_THREADS: Expected a non-negative integer but received "many"',
    ],
    [
      'MEDIA_WORKER_MAX_VIDEO_BYTES',
      '-5',
      'Invalid setting MEDIA_WORKER_MAX_VIDEO_BYTES: Expected a positive integer but received "-5"',
    ],
    [
      'MEDIA_WORKER_ALLOW_PRIVATE_URLS',
      'maybe',
      'Invalid setting MEDIA_WORKER_ALLOW_PRIVATE_URLS: Expected one of 1, true, yes, on, 0, false, no, off but received "maybe"',
    ],
    ['LOG_LEVEL', 'loud', 'Invalid setting LOG_LEVEL:'],
  ])('names %s when its value %s is bad', (env, value, message) => {
    expect(() => loadConfig({ [env]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [env]: value })).toThrow(message);
  });

  it('reports every bad setting at once, in the order of the reference (room by room)', () => {
    expect(() => loadConfig({ MEDIA_WORKER_THREADS: 'x', MEDIA_WORKER_FETCH_DEADLINE_MS: '0' })).toThrow(
      /MEDIA_WORKER_FETCH_DEADLINE_MS[\s\S]*MEDIA_WORKER_THREADS/,
    );
  });

  it('lets overrides (CLI flags) win over the environment', () => {
    expect(loadConfig({ MEDIA_WORKER_THREADS: '2' }, { threads: '3' }).threads).toBe(3);
  });
});

describe('unknown settings', () => {
  it('names the closest setting of any table, prefixes aside', async () => {
    const { findUnknownSettings } = await import('../src/config.js');
    const found = findUnknownSettings({
      MEDIA_WORKER_RESULTS_DIR: '/var/lib/media-worker/results',
      WORKER_CONCURENCY: 'image=1',
      NATS_URLS: 'nats://a:4222',
      MEDIA_WORKER_TEMP_DIR: '/tmp',
      GATEWAY_SOMETHING_ENTIRELY_DIFFERENT_XYZ: '1',
      RESULTS_DIR: '/srv/results',
      NODE_ENV: 'production',
      PATH: '/usr/bin',
    });
    expect(found).toEqual([
      { name: 'GATEWAY_SOMETHING_ENTIRELY_DIFFERENT_XYZ', closest: undefined },
      { name: 'MEDIA_WORKER_RESULTS_DIR', closest: 'RESULTS_DIR' },
      { name: 'MEDIA_WORKER_TEMP_DIR', closest: 'MEDIA_WORKER_TMP_DIR' },
      { name: 'NATS_URLS', closest: 'NATS_URL' },
      { name: 'WORKER_CONCURENCY', closest: 'WORKER_CONCURRENCY' },
    ]);
  });

  it('knows every variable of every settings table (a new table is covered once listed)', async () => {
    const { knownSettingNames, SETTINGS_SECTIONS, findUnknownSettings } = await import('../src/config.js');
    const names = knownSettingNames();
    for (const section of SETTINGS_SECTIONS)
      for (const spec of Object.values(section.table)) expect(names).toContain(spec.env);
    expect(findUnknownSettings(Object.fromEntries(names.map((n) => [n, 'x'])))).toEqual([]);
  });
});
