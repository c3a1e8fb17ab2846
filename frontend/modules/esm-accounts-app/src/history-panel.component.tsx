import React, { useState } from 'react';
import {
  Button,
  InlineLoading,
  InlineNotification,
  Search,
  Select,
  SelectItem,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableHeader,
  TableRow,
  TextInput,
} from '@carbon/react';
import { useTranslation } from 'react-i18next';
import { formatDatetime } from '@openmrs/esm-framework';
import { type AuditEntry, usePatientSearch, useAudit, useUsers } from './api';
import styles from './accounts.scss';

/** The kinds of record the trail names most often (the store's table names). */
const TYPES = ['patients', 'visits', 'encounters', 'obs', 'orders', 'conditions', 'allergies', 'programenrollments', 'users', 'roles'];

/**
 * The history of changes: a patient's (found by name or identifier), or everyone's, of
 * one kind of record, by one user, in a period; each change with who made it, when, from which
 * address, and each field's value before and after.
 */
export default function HistoryPanel() {
  const { t } = useTranslation();
  const [query, setQuery] = useState('');
  const [patient, setPatient] = useState<{ uuid: string; name: string } | null>(null);
  const [type, setType] = useState('');
  const [user, setUser] = useState('');
  const { items: users } = useUsers('');
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const { patients, isLoading: searching } = usePatientSearch(patient ? '' : query);
  // The days chosen are the facility's local days, sent as the moments they begin and end.
  const dayStart = (d: string) => (d ? new Date(`${d}T00:00:00`).toISOString() : '');
  const dayEnd = (d: string) => (d ? new Date(`${d}T23:59:59.999`).toISOString() : '');
  const { entries, more, error, isLoading } = useAudit({
    patient: patient?.uuid,
    user,
    type,
    since: dayStart(since),
    until: dayEnd(until),
  });
  const action = (a: AuditEntry['action']) =>
    ({
      created: t('actionCreated', 'Created'),
      changed: t('actionChanged', 'Changed'),
      voided: t('actionVoided', 'Voided'),
      unvoided: t('actionUnvoided', 'Restored'),
      purged: t('actionPurged', 'Deleted for good'),
    })[a] ?? a;
  const kind = (table: string) => t(`recordType.${table}`, table);
  const value = (v: unknown) => (v === null || v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));

  return (
    <section>
      <div className={styles.toolbar}>
        {patient ? (
          <div>
            <div className="cds--label">{t('patientFilter', 'Patient')}</div>
            <strong>{patient.name}</strong>{' '}
            <Button kind="ghost" size="sm" onClick={() => { setPatient(null); setQuery(''); }}>
              {t('clearPatient', 'Every patient')}
            </Button>
          </div>
        ) : (
          <Search
            labelText={t('patientFilter', 'Patient')}
            placeholder={t('patientFilterHint', 'Name or identifier of a patient')}
            value={query}
            onChange={(e) => setQuery(e.target.value)}
            closeButtonLabelText={t('clearSearch', 'Clear search')}
            size="md"
          />
        )}
        <Select id="audit-type" labelText={t('recordKind', 'Kind of record')} value={type} onChange={(e) => setType(e.target.value)}>
          <SelectItem value="" text={t('allKinds', 'Every kind')} />
          {TYPES.map((k) => (
            <SelectItem key={k} value={k} text={kind(k)} />
          ))}
        </Select>
        <Select id="audit-user" labelText={t('madeBy', 'Made by')} value={user} onChange={(e) => setUser(e.target.value)}>
          <SelectItem value="" text={t('allUsers', 'Every user')} />
          <SelectItem value="system" text={t('system', 'System')} />
          {users.map((u) => (
            <SelectItem key={u.uuid} value={u.uuid} text={u.username} />
          ))}
        </Select>
        <TextInput id="audit-since" type="date" labelText={t('since', 'From')} value={since} onChange={(e) => setSince(e.target.value)} />
        <TextInput id="audit-until" type="date" labelText={t('until', 'To')} value={until} onChange={(e) => setUntil(e.target.value)} />
      </div>
      {!patient && query.trim().length >= 2 && (
        <div className={styles.actions}>
          {searching && <InlineLoading description={t('loading', 'Loading…')} />}
          {patients.map((p) => (
            <Button key={p.uuid} kind="tertiary" size="sm" onClick={() => setPatient({ uuid: p.uuid, name: p.person.preferredName?.display ?? p.display })}>
              {p.display}
            </Button>
          ))}
        </div>
      )}
      {isLoading && <InlineLoading description={t('loading', 'Loading…')} />}
      {error && <InlineNotification kind="error" lowContrast hideCloseButton title={t('loadFailed', 'Could not load')} subtitle={error.message} />}
      <Table size="md" useZebraStyles>
        <TableHead>
          <TableRow>
            <TableHeader>{t('when', 'When')}</TableHeader>
            <TableHeader>{t('who', 'Who')}</TableHeader>
            <TableHeader>{t('recordKind', 'Kind of record')}</TableHeader>
            <TableHeader>{t('change', 'Change')}</TableHeader>
            <TableHeader>{t('details', 'Details')}</TableHeader>
          </TableRow>
        </TableHead>
        <TableBody>
          {entries.map((e) => (
            <TableRow key={e.uuid}>
              <TableCell>{formatDatetime(new Date(e.dateCreated))}</TableCell>
              <TableCell>
                {e.user?.display ?? t('system', 'System')}
                {e.clientAddress && <div className="cds--label">{e.clientAddress}</div>}
              </TableCell>
              <TableCell>{kind(e.recordType)}</TableCell>
              <TableCell>{action(e.action)}</TableCell>
              <TableCell>
                <ul>
                  {/* The uuids of a record's names, addresses and identifiers say nothing to a reader. */}
                  {e.changes.filter((c) => !c.field.endsWith('.uuid')).map((c) => (
                    <li key={c.field}>
                      <code>{c.field}</code> : {value(c.before)} → {value(c.after)}
                    </li>
                  ))}
                </ul>
              </TableCell>
            </TableRow>
          ))}
        </TableBody>
      </Table>
      {!isLoading && entries.length === 0 && <p>{t('noChanges', 'No change recorded.')}</p>}
      {more && <p className={styles.hint}>{t('olderChanges', 'Only the hundred newest changes are shown: narrow the filters to see older ones.')}</p>}
    </section>
  );
}
