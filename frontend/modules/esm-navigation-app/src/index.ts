import { defineConfigSchema, getSyncLifecycle } from '@openmrs/esm-framework';
import { sideLink } from './side-link.component';

// The bed management app (11.1.0) and the stock management app (3.2.1) write their left
// panels' links in English whatever the user's language; these take their place (the
// configuration removes the apps' own).
const moduleName = '@dse-rdc/esm-navigation-app';
const options = { featureName: 'side-navigation', moduleName };

export const importTranslation = require.context('../translations', false, /.json$/, 'lazy');

export function startupApp() {
  defineConfigSchema(moduleName, {});
}

export const summaryLink = getSyncLifecycle(sideLink('bed-management', '', 'summary', 'Summary'), options);
export const allocationLink = getSyncLifecycle(
  sideLink('bed-management', 'bed-administration', 'bedAllocation', 'Bed allocation'),
  options,
);
export const typesLink = getSyncLifecycle(sideLink('bed-management', 'bed-types', 'bedTypes', 'Bed types'), options);
export const tagsLink = getSyncLifecycle(sideLink('bed-management', 'bed-tags', 'bedTags', 'Bed tags'), options);

// The home page's overview: the visits under way at the facility (the active visits app's
// widget) and the day's appointments, which the pinned home app (11.1.0) gives no dashboard
// of their own (their slot, `homepage-widgets-slot`, is the dashboard's).
export const homeOverviewLink = getSyncLifecycle(sideLink('home', 'overview', 'homeOverview', 'Overview'), options);

// The stock app's pages. Each link carries the `meta` of the app's own link it replaces
// (routes.json): the app finds its pages from the metas of this slot's extensions. Its
// settings page only points to the legacy administration pages, which this distribution
// does not have: it has no link here.
export const stockOverviewLink = getSyncLifecycle(
  sideLink('stock-management', 'overview', 'stockOverview', 'Overview'),
  options,
);
export const stockItemsLink = getSyncLifecycle(sideLink('stock-management', 'items', 'stockItems', 'Items'), options);
export const stockOperationsLink = getSyncLifecycle(
  sideLink('stock-management', 'operations', 'stockOperations', 'Operations'),
  options,
);
export const stockSourcesLink = getSyncLifecycle(
  sideLink('stock-management', 'sources', 'stockSources', 'Sources'),
  options,
);
export const stockScopesLink = getSyncLifecycle(
  sideLink('stock-management', 'user-scopes', 'stockScopes', 'User role scopes'),
  options,
);
export const stockReportsLink = getSyncLifecycle(
  sideLink('stock-management', 'reports', 'stockReports', 'Reports'),
  options,
);
