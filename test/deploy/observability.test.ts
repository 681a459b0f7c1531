/**
 * deploy/observability/: the alert rules pass `promtool check rules` and their unit tests
 * (`promtool test rules`: series that fire and series that do not, for each alert), every query of
 * the Grafana dashboard parses, and every metric name the rules and the dashboard use is one a
 * running worker or gateway (the shipped `serve` and `gateway`, dist/) exports on /metrics.
 * promtool comes from Debian's `prometheus` package (.ci/run installs it); without it those
 * checks skip and say so.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { useGatewayE2e } from '../scenarios/gateway/e2e-harness.js';

const DIR = path.join(PACKAGE_ROOT, 'deploy', 'observability');
const RULES = path.join(DIR, 'alerts.yml');
const RULE_TESTS = path.join(DIR, 'alerts.test.yml');
const DASHBOARD = path.join(DIR, 'grafana-dashboard.json');

const promtool = spawnSync('promtool', ['--version'], { encoding: 'utf8' }).status === 0;
const NO_PROMTOOL = 'promtool is not installed (Debian: apt-get install prometheus; .ci/run does)';

interface Dashboard {
  panels: { type: string; title: string; targets?: { expr: string }[] }[];
}

async function dashboardQueries(): Promise<{ title: string; expr: string }[]> {
  const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8')) as Dashboard;
  return dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ title: p.title, expr: t.expr })));
}

/** The metric names an expression or rules file uses: ours all start with media_worker_ or media_gateway_. */
function metricNames(text: string): string[] {
  return [...new Set([...text.matchAll(/\bmedia_(?:worker|gateway)_[a-z0-9_]+/g)].map((m) => m[0]))].sort();
}

/** Whether a /metrics text declares the name (a histogram's series end in _bucket, _sum, _count). */
function exports(text: string, name: string): boolean {
  if (new RegExp(`^# TYPE ${name} `, 'm').test(text)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && new RegExp(`^# TYPE ${base} histogram$`, 'm').test(text);
}

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'observability-'));
});
afterAll(async () => {
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!promtool)(`the shipped alert rules and dashboard (${promtool ? 'promtool' : NO_PROMTOOL})`, () => {
  it('pass promtool check rules', async () => {
    const { stdout } = await promisify(execFile)('promtool', ['check', 'rules', RULES]);
    expect(stdout).toMatch(/SUCCESS: 7 rules found/);
  });

  it('pass their unit tests (promtool test rules): each alert fires on its series and not on the others', async () => {
    const { stdout } = await promisify(execFile)('promtool', ['test', 'rules', RULE_TESTS]);
    expect(stdout).toMatch(/SUCCESS/);
    // Every alert has a test.
    const alerts = [...(await readFile(RULES, 'utf8')).matchAll(/- alert: (\w+)/g)].map((m) => m[1]);
    const tested = await readFile(RULE_TESTS, 'utf8');
    for (const alert of alerts) expect(tested, alert).toContain(`alertname: ${alert}`);
  });

  it("every dashboard query parses (checked by promtool as a recording rule, Grafana's $__ variables given values)", async () => {
    const queries = await dashboardQueries();
    expect(queries.length).toBeGreaterThan(15);
    const rules = queries.map(
      (q, i) =>
        `      - record: dashboard:q${i}\n        expr: ${JSON.stringify(q.expr.replaceAll('$__rate_interval', '5m').replaceAll('$__range', '6h'))}`,
    );
    const file = path.join(dir, 'dashboard-queries.yml');
    await writeFile(file, `groups:\n  - name: dashboard\n    rules:\n${rules.join('\n')}\n`);
    const { stdout } = await promisify(execFile)('promtool', ['check', 'rules', file]);
    expect(stdout).toMatch(new RegExp(`SUCCESS: ${queries.length} rules found`));
  });
});

describe('the metric names of the rules and the dashboard', () => {
  const e2e = useGatewayE2e({ name: 'media-observability-', files: () => Promise.resolve({}) });

  it('are each exported by a running worker or gateway', async () => {
    const used = metricNames(
      [await readFile(RULES, 'utf8'), ...(await dashboardQueries()).map((q) => q.expr)].join('\n'),
    );
    expect(used.length).toBeGreaterThan(20);
    const healthPort = /"healthPort":(\d+)/.exec(e2e.serve.output())?.[1];
    expect(healthPort).toBeDefined();
    const worker = await (await fetch(`http://127.0.0.1:${healthPort}/metrics`)).text();
    const gateway = await (await fetch(`${e2e.gateway.url}/metrics`)).text();
    const missing = used.filter((name) => !exports(name.startsWith('media_worker_') ? worker : gateway, name));
    expect(missing).toEqual([]);
    // The gauges read when scraped have values from the running deployment.
    expect(gateway).toMatch(/^media_gateway_queue_depth\{kind="image"\} 0$/m);
    expect(gateway).toMatch(/^media_gateway_webhook_backlog 0$/m);
    expect(gateway).toMatch(/^media_gateway_view_live\{family="tasks"\} 1$/m);
    expect(gateway).toMatch(/^media_gateway_nats_connected 1$/m);
    expect(worker).toMatch(/^media_worker_nats_connected 1$/m);
    expect(worker).toMatch(/^media_worker_results_sweep_last_success_timestamp_seconds [1-9]/m);
    // Started as shipped, the gateway prints no deprecation (Fastify's FSTDEP023 did at every start).
    expect(e2e.gateway.output()).not.toMatch(/FSTDEP|DeprecationWarning/);
  });

  it('say what the deployment does: a queued job, its age, the credits taken, the quote timed', async () => {
    const account = await e2e.newAccount(100);
    // Music is priced but not run here (no slot): the job waits in the queue.
    const submitted = await e2e.api('POST', '/api/v1/generate', account.key, {
      model: 'vendor-v5-generate-music',
      input: { prompt: 'queued' },
    });
    expect(submitted.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const gateway = await (await fetch(`${e2e.gateway.url}/metrics`)).text();
    expect(gateway).toMatch(/^media_gateway_queue_depth\{kind="music"\} 1$/m);
    const age = Number(/^media_gateway_queue_oldest_age_seconds\{kind="music"\} (\S+)$/m.exec(gateway)?.[1]);
    expect(age).toBeGreaterThanOrEqual(1);
    expect(age).toBeLessThan(60);
    expect(gateway).toMatch(/^media_gateway_credits_total\{direction="debited"\} 15$/m);
    expect(gateway).toMatch(/^media_gateway_quote_duration_seconds_count\{outcome="ok"\} 1$/m);
  });
});
