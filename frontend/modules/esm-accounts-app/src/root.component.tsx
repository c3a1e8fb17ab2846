import React from 'react';
import { Tab, TabList, TabPanel, TabPanels, Tabs } from '@carbon/react';
import { useTranslation } from 'react-i18next';
import { useSession, userHasAccess } from '@openmrs/esm-framework';
import UsersPanel from './users-panel.component';
import RolesPanel from './roles-panel.component';
import ProvidersPanel from './providers-panel.component';
import styles from './accounts.scss';

/** The accounts page: users, roles and providers, each on its tab. */
export default function Root() {
  const { t } = useTranslation();
  const session = useSession();
  if (!session?.user) return null;
  if (!userHasAccess('Get Users', session.user)) {
    return <p className={styles.page}>{t('notAllowed', 'Your account may not administer accounts.')}</p>;
  }
  return (
    <main className={styles.page}>
      <h1 className={styles.title}>{t('accountsAndRoles', 'Accounts and roles')}</h1>
      <Tabs>
        <TabList aria-label={t('accountsAndRoles', 'Accounts and roles')}>
          <Tab>{t('users', 'Users')}</Tab>
          <Tab>{t('roles', 'Roles')}</Tab>
          <Tab>{t('providers', 'Providers')}</Tab>
        </TabList>
        <TabPanels>
          <TabPanel>
            <UsersPanel />
          </TabPanel>
          <TabPanel>
            <RolesPanel />
          </TabPanel>
          <TabPanel>
            <ProvidersPanel />
          </TabPanel>
        </TabPanels>
      </Tabs>
    </main>
  );
}
