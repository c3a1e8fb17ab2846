import React from 'react';
import { ConfigurableLink } from '@openmrs/esm-framework';
import { useTranslation } from 'react-i18next';

// The reports app (@openmrs/esm-reports-app) links to itself only from the system
// administration page, which this distribution does not ship: its entry in the app menu.
export default function ReportsAppMenuLink() {
  const { t } = useTranslation();
  return <ConfigurableLink to={`\${openmrsSpaBase}/reports`}>{t('reports', 'Reports')}</ConfigurableLink>;
}
