import { defineConfigSchema, getSyncLifecycle } from '@openmrs/esm-framework';
import { bedLink } from './bed-link.component';

// The bed management app (11.1.0) writes its left panel's links in English whatever the
// user's language; these take their place (the configuration removes the app's own).
const moduleName = '@dse-rdc/esm-bed-navigation-app';
const options = { featureName: 'bed-navigation', moduleName };

export const importTranslation = require.context('../translations', false, /.json$/, 'lazy');

export function startupApp() {
  defineConfigSchema(moduleName, {});
}

export const summaryLink = getSyncLifecycle(bedLink('', 'summary', 'Summary'), options);
export const allocationLink = getSyncLifecycle(
  bedLink('bed-administration', 'bedAllocation', 'Bed allocation'),
  options,
);
export const typesLink = getSyncLifecycle(bedLink('bed-types', 'bedTypes', 'Bed types'), options);
export const tagsLink = getSyncLifecycle(bedLink('bed-tags', 'bedTags', 'Bed tags'), options);
