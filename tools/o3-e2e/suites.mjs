// Runs the O3 suites prepared by tools/o3-e2e/run.sh against the distribution that
// frontend/e2e/run.sh started (E2E_BASE, E2E_PASSWORD), then writes each suite's counts per
// spec file (the last run of each, with its commit) and its failures to
// tools/o3-e2e/results/<suite>.md, from the record kept beside it (<suite>.json).
// `node tools/o3-e2e/suites.mjs --record <suite>` only records the suite's last report
// (suites/<suite>/results.json), at O3_E2E_COMMIT if given.
import { spawnSync, execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const recordOnly = process.argv[2] === '--record';
const work = process.env.O3_E2E_WORK || join(import.meta.dirname, '../../target/o3-e2e');
const suites = recordOnly ? [process.argv[3]] : (process.env.O3_E2E_SUITES || '').split(' ').filter(Boolean);
const specs = (process.env.O3_E2E_SPECS || '').split(' ').filter(Boolean);
const resultsDir = process.env.O3_E2E_RESULTS || join(import.meta.dirname, 'results');

// What this distribution's run gives the suite; the rest of its .env (the demo locations,
// visit and encounter types the suites name) stays as its example.env writes it.
const environment = {
  E2E_BASE_URL: `${process.env.E2E_BASE}/openmrs`,
  E2E_USER_ADMIN_USERNAME: 'admin',
  E2E_USER_ADMIN_PASSWORD: process.env.E2E_PASSWORD,
};

function outcomes(suite, file, into) {
  for (const spec of suite.specs || []) {
    for (const test of spec.tests || []) {
      const last = (test.results || []).at(-1);
      const message = last?.error?.message?.split('\n').find((line) => line.trim()) || '';
      into.push({ file: file || suite.file, title: spec.title, status: test.status, message });
    }
  }
  for (const child of suite.suites || []) outcomes(child, file || suite.file, into);
  return into;
}

const commit =
  process.env.O3_E2E_COMMIT || execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
let failures = 0;
for (const suite of suites) {
  const dir = join(work, 'suites', suite);
  if (!recordOnly) {
    const example = readFileSync(join(dir, 'example.env'), 'utf8');
    const lines = example
      .split('\n')
      .filter((line) => /^[A-Z0-9_]+=/.test(line) && !(line.split('=')[0] in environment));
    for (const [key, value] of Object.entries(environment)) lines.push(`${key}=${value}`);
    writeFileSync(join(dir, '.env'), lines.join('\n') + '\n');

    console.log(`\n== ${suite}${specs.length ? `: ${specs.join(' ')}` : ''}`);
    // A report left by an earlier run must not be taken for this one's.
    rmSync(join(dir, 'results.json'), { force: true });
    spawnSync('node', ['node_modules/@playwright/test/cli.js', 'test', '-c', 'o3.config.ts', ...specs], {
      cwd: dir,
      stdio: 'inherit',
      env: { ...process.env, CI: '' },
    });
  }
  const report = join(dir, 'results.json');
  if (!existsSync(report)) {
    console.error(`${suite}: no report`);
    failures += 1;
    continue;
  }
  const tests = (JSON.parse(readFileSync(report, 'utf8')).suites || []).flatMap((s) => outcomes(s, s.file, []));
  const perSpec = new Map();
  for (const test of tests) {
    const counts = perSpec.get(test.file) || { passed: 0, failed: 0, skipped: 0, flaky: 0 };
    const key = { expected: 'passed', unexpected: 'failed', skipped: 'skipped', flaky: 'flaky' }[test.status];
    counts[key] += 1;
    perSpec.set(test.file, counts);
  }
  // The suite's record: one entry per spec file, replaced by each run that ran it (a run of
  // chosen specs updates those only), each with the commit and day it was run at.
  const day = new Date().toISOString().slice(0, 10);
  const recordFile = resultsDir && join(resultsDir, `${suite}.json`);
  const record = recordFile && existsSync(recordFile) ? JSON.parse(readFileSync(recordFile, 'utf8')) : {};
  for (const [file, c] of perSpec) {
    const failed = tests
      .filter((t) => t.file === file && t.status === 'unexpected')
      .map((t) => `${t.title}: ${t.message.replace(/\u001b\[[0-9;]*m/g, '').slice(0, 300)}`);
    record[file] = { passed: c.passed + c.flaky, failed: c.failed, skipped: c.skipped, commit, day, failed_tests: failed };
    failures += c.failed;
  }
  const total = { passed: 0, failed: 0, skipped: 0 };
  const rows = Object.keys(record)
    .sort()
    .map((file) => {
      const r = record[file];
      for (const k of Object.keys(total)) total[k] += r[k];
      return `| ${file} | ${r.passed} | ${r.failed} | ${r.skipped} | ${r.commit} (${r.day}) |`;
    });
  const failedLines = Object.keys(record)
    .sort()
    .flatMap((file) => record[file].failed_tests.map((t) => `- ${file}: ${t}`));
  const text = [
    `# ${suite}: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`,
    '',
    `Written by \`bash tools/o3-e2e/run.sh ${suite}\`: each spec file's counts come from the last run that ran it, at the commit given.`,
    '',
    '| spec | passed | failed | skipped | run at |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    ...(failedLines.length ? ['Failures:', '', ...failedLines, ''] : []),
  ].join('\n');
  console.log('\n' + text);
  if (recordFile) {
    mkdirSync(resultsDir, { recursive: true });
    writeFileSync(recordFile, JSON.stringify(record, null, 2) + '\n');
    writeFileSync(join(resultsDir, `${suite}.md`), text);
  }
}
process.exit(failures ? 1 : 0);
