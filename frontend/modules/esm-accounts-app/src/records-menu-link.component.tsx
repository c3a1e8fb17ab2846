import React from 'react';
import { ConfigurableLink } from '@openmrs/esm-framework';
import { useTranslation } from 'react-i18next';

export default function RecordsAppMenuLink() {
  const { t } = useTranslation();
  return <ConfigurableLink to={`\${openmrsSpaBase}/records`}>{t('patientRecords', 'Patient records')}</ConfigurableLink>;
}
