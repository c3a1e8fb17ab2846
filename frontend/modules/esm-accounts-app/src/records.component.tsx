import React from 'react';
import { Tab, TabList, TabPanel, TabPanels, Tabs } from '@carbon/react';
import { useTranslation } from 'react-i18next';
import { useSession, userHasAccess } from '@openmrs/esm-framework';
import DuplicatesPanel from './duplicates-panel.component';
import HistoryPanel from './history-panel.component';
import styles from './accounts.scss';

/**
 * The patients' records page of a data manager: the likely duplicates and their merge
 * (privilege Edit Patients, as the server's merge), and the history of changes (privilege
 * View Audit Log). A tab the account may not use is not shown.
 */
export default function Records() {
  const { t } = useTranslation();
  const session = useSession();
  if (!session?.user) return null;
  const mayMerge = userHasAccess('Edit Patients', session.user);
  const mayAudit = userHasAccess('View Audit Log', session.user);
  if (!mayMerge && !mayAudit) {
    return <p className={styles.page}>{t('recordsNotAllowed', 'Your account may not review patient records.')}</p>;
  }
  return (
    <main className={styles.page}>
      <h1 className={styles.title}>{t('patientRecords', 'Patient records')}</h1>
      <Tabs>
        <TabList aria-label={t('patientRecords', 'Patient records')}>
          {mayMerge && <Tab>{t('duplicatesAndMerge', 'Duplicates and merge')}</Tab>}
          {mayAudit && <Tab>{t('changeHistory', 'Change history')}</Tab>}
        </TabList>
        <TabPanels>
          {mayMerge && (
            <TabPanel>
              <DuplicatesPanel />
            </TabPanel>
          )}
          {mayAudit && (
            <TabPanel>
              <HistoryPanel />
            </TabPanel>
          )}
        </TabPanels>
      </Tabs>
    </main>
  );
}
