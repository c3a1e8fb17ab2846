import { defineConfigSchema, getAsyncLifecycle } from '@openmrs/esm-framework';

const moduleName = '@dse-rdc/esm-accounts-app';
const options = { featureName: 'accounts', moduleName };

// The module has no settings of its own; an empty schema lets the configuration name it.
export const importTranslation = require.context('../translations', false, /.json$/, 'lazy');

export function startupApp() {
  defineConfigSchema(moduleName, {});
}

export const root = getAsyncLifecycle(() => import('./root.component'), options);

export const accountsAppMenuLink = getAsyncLifecycle(() => import('./app-menu-link.component'), options);

export const records = getAsyncLifecycle(() => import('./records.component'), options);

export const recordsAppMenuLink = getAsyncLifecycle(() => import('./records-menu-link.component'), options);
export const reportsAppMenuLink = getAsyncLifecycle(() => import('./reports-menu-link.component'), options);
