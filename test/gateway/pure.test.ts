/** The gateway's pure parts: settings messages, ids, and the task views of spec 2.2 and 2.3. */
import { describe, expect, it } from 'vitest';
import { hashApiKey, newApiKey, newTaskId } from '../../src/gateway/ids.js';
import { parseGatewaySettings } from '../../src/gateway/settings.js';
import type { TaskRecord } from '../../src/gateway/store/records.js';
import { submissionView, taskView } from '../../src/gateway/api-views.js';
import { isTaskId } from '../../src/protocol/index.js';

describe('gateway settings', () => {
  it('has defaults and names the variable of a bad value', () => {
    expect(parseGatewaySettings({})).toMatchObject({
      port: 8080,
      streamPrefix: 'GATEWAY',
      serveResults: false,
      historyPageSize: 20,
    });
    expect(() => parseGatewaySettings({ port: '70000' })).toThrow(
      'Invalid setting GATEWAY_PORT: Expected a port number from 0 to 65535 but received "70000"',
    );
    expect(() => parseGatewaySettings({ streamPrefix: 'a.b' })).toThrow(/Invalid setting GATEWAY_STREAM_PREFIX/);
    expect(() => parseGatewaySettings({ uploadsEnabled: 'true' })).toThrow(
      /GATEWAY_UPLOADS: Expected GATEWAY_SERVE_RESULTS=true/,
    );
  });
});

describe('gateway ids', () => {
  it('makes task ids that follow the protocol rule and sort by creation time', () => {
    const early = newTaskId(Date.UTC(2025, 0, 1));
    const late = newTaskId(Date.UTC(2025, 0, 1) + 1);
    expect(isTaskId(early) && isTaskId(late)).toBe(true);
    expect(early < late).toBe(true);
    expect(newTaskId()).not.toBe(newTaskId());
  });

  it('makes API keys with 256 random bits and stores their SHA-256', () => {
    const key = newApiKey();
    expect(key).toMatch(/^mwk_[A-Za-z0-9_-]{43}$/);
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

const base: TaskRecord = {
  id: 't_1',
  accountId: 'acct_1',
  model: 'vendor-v5-generate-music',
  kind: 'music',
  status: 'pending',
  creditsUsed: 15,
  createdAt: '2025-03-01T12:00:00.000Z',
  debitSeq: 3,
  extras: {},
};

describe('task views', () => {
  it('shows the short submission object, plus pollUrl and duration for lip-sync and input for the tools', () => {
    expect(submissionView(base, 85)).toEqual({
      id: 't_1',
      model: 'vendor-v5-generate-music',
      status: 'pending',
      creditsUsed: 15,
      creditsRemaining: 85,
      createdAt: base.createdAt,
    });
    const lips = submissionView(
      { ...base, model: 'vendor-lipsync-2', extras: { pollUrl: '/api/v1/tasks/t_1', duration: 15.04 } },
      0,
    );
    expect(Object.keys(lips)).toEqual([
      'id',
      'model',
      'status',
      'creditsUsed',
      'creditsRemaining',
      'createdAt',
      'pollUrl',
      'duration',
    ]);
  });

  it('reports music as vendor/generate-music with mediaType when completed, and a failure with its refund', () => {
    const done = taskView({
      ...base,
      status: 'completed',
      reportedModel: 'vendor/generate-music',
      mediaType: 'music',
      result: { songs: [] },
    });
    expect(done).toEqual({
      id: 't_1',
      model: 'vendor/generate-music',
      status: 'completed',
      mediaType: 'music',
      result: { songs: [] },
      creditsUsed: 15,
      createdAt: base.createdAt,
    });
    const failed = taskView({
      ...base,
      status: 'failed',
      error: { code: 'GENERATION_FAILED', message: 'x' },
      creditsRefunded: 15,
    });
    expect(failed).toEqual({
      id: 't_1',
      model: 'vendor-v5-generate-music',
      status: 'failed',
      error: { code: 'GENERATION_FAILED', message: 'x' },
      creditsUsed: 0,
      creditsRefunded: 15,
      createdAt: base.createdAt,
    });
  });
});
