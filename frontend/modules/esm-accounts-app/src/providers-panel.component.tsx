import React, { useState } from 'react';
import {
  Button,
  InlineLoading,
  InlineNotification,
  Select,
  SelectItem,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableHeader,
  TableRow,
  Tag,
  TextInput,
} from '@carbon/react';
import { useTranslation } from 'react-i18next';
import { type Provider, createProvider, retireProvider, unretireProvider, useProviders, useUsers } from './api';
import { FormModal, useQuickAction } from './shared.component';
import styles from './accounts.scss';

/**
 * Providers: every account records encounters as its own provider until one is made for
 * its person here (with the facility's identifier); a provider without an account (a
 * visiting clinician) has a name instead.
 */
export default function ProvidersPanel() {
  const { t } = useTranslation();
  const { items: providers, error, isLoading, mutate } = useProviders();
  const { items: users } = useUsers('');
  const quick = useQuickAction(mutate);
  const [dialog, setDialog] = useState<{ kind: 'create' } | { kind: 'retire'; provider: Provider } | null>(null);
  const [person, setPerson] = useState('');
  const [name, setName] = useState('');
  const [identifier, setIdentifier] = useState('');
  const [reason, setReason] = useState('');
  const close = () => {
    setDialog(null);
    mutate();
  };
  const openCreate = () => {
    setPerson('');
    setName('');
    setIdentifier('');
    setDialog({ kind: 'create' });
  };

  return (
    <section>
      <div className={styles.toolbar}>
        <Button onClick={openCreate}>{t('createProvider', 'Create a provider')}</Button>
      </div>
      {isLoading && <InlineLoading description={t('loading', 'Loading…')} />}
      {error && <InlineNotification kind="error" lowContrast hideCloseButton title={t('loadFailed', 'Could not load')} subtitle={error.message} />}
      <Table size="md" useZebraStyles>
        <TableHead>
          <TableRow>
            <TableHeader>{t('identifier', 'Identifier')}</TableHeader>
            <TableHeader>{t('name', 'Name')}</TableHeader>
            <TableHeader>{t('status', 'Status')}</TableHeader>
            <TableHeader>{t('actions', 'Actions')}</TableHeader>
          </TableRow>
        </TableHead>
        <TableBody>
          {providers.map((p) => (
            <TableRow key={p.uuid}>
              <TableCell>{p.identifier}</TableCell>
              <TableCell>{p.person?.display ?? p.name}</TableCell>
              <TableCell>
                {p.retired ? <Tag type="gray">{t('retired', 'Retired')}</Tag> : <Tag type="green">{t('active', 'Active')}</Tag>}
              </TableCell>
              <TableCell>
                {p.retired ? (
                  <Button kind="ghost" size="sm" onClick={() => quick(() => unretireProvider(p.uuid), t('providerReactivated', 'Provider reactivated'))}>
                    {t('reactivate', 'Reactivate')}
                  </Button>
                ) : (
                  <Button kind="danger--ghost" size="sm" onClick={() => { setReason(''); setDialog({ kind: 'retire', provider: p }); }}>
                    {t('retire', 'Retire')}
                  </Button>
                )}
              </TableCell>
            </TableRow>
          ))}
        </TableBody>
      </Table>
      <FormModal
        open={dialog?.kind === 'create'}
        heading={t('createProvider', 'Create a provider')}
        submitText={t('create', 'Create')}
        done={t('providerCreated', 'Provider created')}
        onClose={close}
        onSubmit={() => createProvider(person ? { person, identifier } : { name, identifier })}
      >
        <Select id="provider-account" labelText={t('providerAccount', 'Account')} value={person} onChange={(e) => setPerson(e.target.value)}>
          <SelectItem value="" text={t('noAccount', 'No account (a name only)')} />
          {users
            .filter((u) => !u.retired)
            .map((u) => (
              <SelectItem key={u.uuid} value={u.person.uuid} text={`${u.person.display} (${u.username})`} />
            ))}
        </Select>
        {!person && <TextInput id="provider-name" labelText={t('name', 'Name')} value={name} onChange={(e) => setName(e.target.value)} />}
        <TextInput id="provider-identifier" labelText={t('identifier', 'Identifier')} value={identifier} onChange={(e) => setIdentifier(e.target.value)} />
      </FormModal>
      {dialog?.kind === 'retire' && (
        <FormModal
          open
          danger
          heading={t('retireProvider', 'Retire the provider {{identifier}}', { identifier: dialog.provider.identifier })}
          submitText={t('retire', 'Retire')}
          done={t('providerRetired', 'Provider retired')}
          onClose={close}
          onSubmit={() => retireProvider(dialog.provider.uuid, reason || t('defaultRetireReason', 'left the facility'))}
        >
          <TextInput id="provider-retire-reason" labelText={t('reason', 'Reason')} value={reason} onChange={(e) => setReason(e.target.value)} />
        </FormModal>
      )}
    </section>
  );
}
