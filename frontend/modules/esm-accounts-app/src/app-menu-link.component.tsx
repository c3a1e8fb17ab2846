import React from 'react';
import { ConfigurableLink } from '@openmrs/esm-framework';
import { useTranslation } from 'react-i18next';

export default function AccountsAppMenuLink() {
  const { t } = useTranslation();
  return <ConfigurableLink to={`\${openmrsSpaBase}/accounts`}>{t('accountsAndRoles', 'Accounts and roles')}</ConfigurableLink>;
}
