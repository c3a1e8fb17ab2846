import { defineConfigSchema, getSyncLifecycle } from '@openmrs/esm-framework';
import { PrintStickerMenuItem } from './print-sticker.component';

// The pinned patient banner (12.3.4) prints no identifier sticker: this module adds the
// action to the banner's actions menu, backed by the patient documents module's PDF.
const moduleName = '@dse-rdc/esm-patient-documents-app';
const options = { featureName: 'patient-documents', moduleName };

export const importTranslation = require.context('../translations', false, /.json$/, 'lazy');

export function startupApp() {
  defineConfigSchema(moduleName, {});
}

export const printStickerMenuItem = getSyncLifecycle(PrintStickerMenuItem, options);
