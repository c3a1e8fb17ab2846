// The suite's own Playwright configuration, with what this machine needs and nothing else:
// Debian's Chromium instead of Playwright's download, no video (2 cores), and a JSON report
// next to upstream's for tools/o3-e2e/suites.mjs. Timeouts, retries and workers stay the suite's.
import base from './playwright.config';

const chromium = { executablePath: process.env.O3_E2E_CHROMIUM || '/usr/bin/chromium' };

export default {
  ...base,
  reporter: [['list'], ['json', { outputFile: 'results.json' }]],
  use: { ...base.use, video: 'off', launchOptions: chromium },
  projects: (base.projects || []).map((project) => {
    const { channel: _channel, ...use } = project.use || {};
    return { ...project, use: { ...use, launchOptions: chromium } };
  }),
};
