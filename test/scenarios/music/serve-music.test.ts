/**
 * Music through `media-worker serve` as shipped (dist/), against a real nats-server, with the
 * generated MusicGen TEST model: a job on NATS -> exactly one completed event with 2 songs whose
 * MP3s ffprobe accepts and whose covers are 1024x1024 JPEGs in the results store; a job with
 * lyrics -> one failed GENERATION_FAILED event naming why. WORKER_CONCURRENCY is left unset:
 * configuring a music backend is what turns the music slot on. Under the shipped per-role users
 * (test/helpers/role-nats.ts): `serve` as `worker-host1`, provisioning and jobs as operator, the
 * progress read as gateway.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlPlane, waitFor, type ControlPlane } from '../../worker/helpers/jetstream.js';
import { startRoleNats, type RoleNats } from '../../helpers/role-nats.js';
import { provisionFromEnv } from '../../helpers/provision.js';
import { serveEnv, spawnServe, type ServeProcess } from '../../helpers/serve-process.js';

let roles: RoleNats;
let cp: ControlPlane;
let watcher: NatsConnection;
let dir: string;
let daemon: ServeProcess;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'media-worker-serve-music-'));
  roles = await startRoleNats(dir);
  const env: NodeJS.ProcessEnv = {
    ...serveEnv(roles),
    MEDIA_WORKER_TMP_DIR: await mkdtemp(path.join(dir, 'tmp-')),
    RESULTS_DIR: path.join(dir, 'results'),
    MEDIA_WORKER_MUSIC_BACKENDS: 'musicgen',
    MEDIA_WORKER_MUSICGEN_MODEL: path.join(dir, 'musicgen-test'),
    MEDIA_WORKER_MUSIC_SECONDS: '1',
  };
  delete env['WORKER_CONCURRENCY'];
  await provisionFromEnv({ ...env, ...roles.env('operator') });
  daemon = spawnServe(env);
  await daemon.serving();
  cp = await controlPlane(
    roles.url,
    { jobsStream: 'MEDIA_JOBS', eventsStream: 'MEDIA_EVENTS' },
    roles.auth('operator'),
  );
  // Progress is the gateway's to read.
  watcher = await roles.connectAs('gateway');
});

afterAll(async () => {
  await daemon?.stop();
  await cp?.close();
  await watcher?.close();
  await roles?.close();
  await rm(dir, { recursive: true, force: true });
});

function ffprobe(file: string): { format: string; codec: string; duration: number } {
  const json = JSON.parse(
    execFileSync('ffprobe', ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', file], {
      encoding: 'utf8',
    }),
  ) as {
    format: { format_name: string; duration: string };
    streams: { codec_name: string }[];
  };
  return {
    format: json.format.format_name,
    codec: json.streams[0]?.codec_name ?? '',
    duration: Number(json.format.duration),
  };
}

describe('music through serve', () => {
  it('completes a music job with exactly one event of two songs, stored as checked MP3s and JPEG covers', async () => {
    const stages: string[] = [];
    watcher.subscribe('media.progress.serve-music-1', {
      callback: (_err, msg) => {
        stages.push((msg.json() as { stage: string }).stage);
      },
    });
    await watcher.flush();
    await cp.publishJob('music', 'vendor-v5-generate-music', {
      id: 'serve-music-1',
      model: 'vendor-v5-generate-music',
      input: { prompt: 'calm piano, rainy night', instrumental: true },
    });
    const event = await waitFor('the music event', async () => (await cp.eventsOf('serve-music-1'))[0], 90_000);
    expect(event).toMatchObject({
      id: 'serve-music-1',
      model: 'vendor/generate-music',
      mediaType: 'music',
      status: 'completed',
      creditsUsed: 15,
    });
    const songs = (
      event.result as {
        songs: {
          audio_url: string;
          image_url: string;
          duration: number;
          title: string;
          tags: string;
          prompt: string;
        }[];
      }
    ).songs;
    expect(songs).toHaveLength(2);
    for (const [i, song] of songs.entries()) {
      expect(song).toMatchObject({ duration: 1, title: 'Calm piano', tags: 'calm piano, rainy night', prompt: '' });
      expect(song.audio_url).toBe(`https://cdn.example.test/results/music/serve-music-1/song-${i + 1}.mp3`);
      expect(song.image_url).toBe(`https://cdn.example.test/results/music/serve-music-1/cover-${i + 1}.jpg`);
      const mp3 = path.join(dir, 'results', 'music', 'serve-music-1', `song-${i + 1}.mp3`);
      expect(ffprobe(mp3)).toMatchObject({ format: 'mp3', codec: 'mp3' });
      const cover = await sharp(path.join(dir, 'results', 'music', 'serve-music-1', `cover-${i + 1}.jpg`)).metadata();
      expect([cover.format, cover.width, cover.height]).toEqual(['jpeg', 1024, 1024]);
    }
    expect((await stat(path.join(dir, 'results', 'music', 'serve-music-1', 'song-1.mp3'))).size).toBeGreaterThan(1000);
    // Progress went out while it generated: decoding steps, then the MP3s.
    expect(stages).toEqual(expect.arrayContaining(['musicgen: generating', 'encoding mp3']));
    expect(daemon.log()).toContain('"backend":"musicgen"');
    expect(await cp.eventsOf('serve-music-1')).toHaveLength(1);
  });

  it('fails a job with lyrics with GENERATION_FAILED naming why, in one event', async () => {
    await cp.publishJob('music', 'vendor-v5-generate-music', {
      id: 'serve-music-2',
      model: 'vendor-v5-generate-music',
      input: { custom_mode: true, title: 'Sung', style: 'pop', lyrics: '[Verse]\nla la la', instrumental: false },
    });
    const event = await waitFor('the failed event', async () => (await cp.eventsOf('serve-music-2'))[0], 60_000);
    expect(event).toMatchObject({
      status: 'failed',
      refund: true,
      error: {
        code: 'GENERATION_FAILED',
        status: 500,
        message: 'No music backend can serve this job: musicgen cannot sing lyrics',
      },
    });
    expect(await cp.eventsOf('serve-music-2')).toHaveLength(1);
  });
});
