import React, { useState } from 'react';
import {
  Button,
  InlineLoading,
  InlineNotification,
  PasswordInput,
  Search,
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
import { type User, createUser, resetPassword, retireUser, setUserRoles, unretireUser, useRoles, useUsers } from './api';
import { Choices, FormModal, useQuickAction } from './shared.component';
import styles from './accounts.scss';

type Dialog = { kind: 'create' } | { kind: 'roles' | 'password' | 'retire'; user: User } | null;

export default function UsersPanel() {
  const { t } = useTranslation();
  const [query, setQuery] = useState('');
  const { items: users, error, isLoading, mutate } = useUsers(query);
  const { items: roles } = useRoles();
  const [dialog, setDialog] = useState<Dialog>(null);
  // Roles are chosen by name, which the server resolves for the content's and its own alike.
  const roleChoices = roles.filter((r) => !r.retired).map((r) => ({ uuid: r.name, display: r.name }));
  const quick = useQuickAction(mutate);

  // The create form's fields.
  const [givenName, setGivenName] = useState('');
  const [familyName, setFamilyName] = useState('');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [chosenRoles, setChosenRoles] = useState<Array<string>>([]);
  const [reason, setReason] = useState('');

  const open = (d: Dialog) => {
    setPassword('');
    setConfirm('');
    setReason('');
    if (d?.kind === 'create') {
      setGivenName('');
      setFamilyName('');
      setUsername('');
      setChosenRoles([]);
    }
    // A retired role grants nothing and cannot be chosen again: it is dropped on saving.
    if (d?.kind === 'roles') setChosenRoles(d.user.roles.map((r) => r.display).filter((name) => roleChoices.some((c) => c.uuid === name)));
    setDialog(d);
  };
  const close = () => {
    setDialog(null);
    mutate();
  };
  const samePasswords = async () => {
    if (password !== confirm) throw new Error(t('passwordsDiffer', 'The two passwords differ.'));
  };
  const passwordFields = (
    <>
      <PasswordInput
        id="account-password"
        labelText={t('password', 'Password')}
        value={password}
        onChange={(e) => setPassword(e.target.value)}
        helperText={t('passwordHelp', 'At least 8 characters, with upper and lower case letters and a digit.')}
        showPasswordLabel={t('showPassword', 'Show password')}
        hidePasswordLabel={t('hidePassword', 'Hide password')}
      />
      <PasswordInput
        id="account-password-confirm"
        labelText={t('confirmPassword', 'Confirm the password')}
        value={confirm}
        onChange={(e) => setConfirm(e.target.value)}
        showPasswordLabel={t('showPassword', 'Show password')}
        hidePasswordLabel={t('hidePassword', 'Hide password')}
      />
    </>
  );

  return (
    <section>
      <div className={styles.toolbar}>
        <Search
          labelText={t('searchUsers', 'Search accounts')}
          placeholder={t('searchUsers', 'Search accounts')}
          closeButtonLabelText={t('clearSearch', 'Clear the search')}
          value={query}
          onChange={(e) => setQuery(e.target.value)}
          size="md"
        />
        <Button onClick={() => open({ kind: 'create' })}>{t('createAccount', 'Create an account')}</Button>
      </div>
      {isLoading && <InlineLoading description={t('loading', 'Loading…')} />}
      {error && <InlineNotification kind="error" lowContrast hideCloseButton title={t('loadFailed', 'Could not load')} subtitle={error.message} />}
      <Table size="md" useZebraStyles>
        <TableHead>
          <TableRow>
            <TableHeader>{t('name', 'Name')}</TableHeader>
            <TableHeader>{t('username', 'Username')}</TableHeader>
            <TableHeader>{t('systemId', 'System id')}</TableHeader>
            <TableHeader>{t('roles', 'Roles')}</TableHeader>
            <TableHeader>{t('status', 'Status')}</TableHeader>
            <TableHeader>{t('actions', 'Actions')}</TableHeader>
          </TableRow>
        </TableHead>
        <TableBody>
          {users.map((u) => (
            <TableRow key={u.uuid} data-username={u.username}>
              <TableCell>{u.person?.display}</TableCell>
              <TableCell>{u.username}</TableCell>
              <TableCell>{u.systemId}</TableCell>
              <TableCell>{u.roles.map((r) => r.display).join(', ')}</TableCell>
              <TableCell>
                {u.retired ? <Tag type="gray">{t('retired', 'Retired')}</Tag> : <Tag type="green">{t('active', 'Active')}</Tag>}
              </TableCell>
              <TableCell>
                <div className={styles.actions}>
                  <Button kind="ghost" size="sm" onClick={() => open({ kind: 'roles', user: u })}>
                    {t('editRoles', 'Roles')}
                  </Button>
                  <Button kind="ghost" size="sm" onClick={() => open({ kind: 'password', user: u })}>
                    {t('resetPassword', 'Reset the password')}
                  </Button>
                  {u.retired ? (
                    <Button kind="ghost" size="sm" onClick={() => quick(() => unretireUser(u.uuid), t('accountReactivated', 'Account reactivated'))}>
                      {t('reactivate', 'Reactivate')}
                    </Button>
                  ) : (
                    <Button kind="danger--ghost" size="sm" onClick={() => open({ kind: 'retire', user: u })}>
                      {t('retire', 'Retire')}
                    </Button>
                  )}
                </div>
              </TableCell>
            </TableRow>
          ))}
        </TableBody>
      </Table>

      <FormModal
        open={dialog?.kind === 'create'}
        heading={t('createAccount', 'Create an account')}
        submitText={t('create', 'Create')}
        done={t('accountCreated', 'Account created')}
        onClose={close}
        onSubmit={async () => {
          await samePasswords();
          await createUser({ givenName, familyName, username, password, roles: chosenRoles });
        }}
      >
        <TextInput id="account-given-name" labelText={t('givenName', 'Given name')} value={givenName} onChange={(e) => setGivenName(e.target.value)} />
        <TextInput id="account-family-name" labelText={t('familyName', 'Family name')} value={familyName} onChange={(e) => setFamilyName(e.target.value)} />
        <TextInput id="account-username" labelText={t('username', 'Username')} value={username} onChange={(e) => setUsername(e.target.value)} />
        {passwordFields}
        <Choices legend={t('roles', 'Roles')} choices={roleChoices} chosen={chosenRoles} onChange={setChosenRoles} />
      </FormModal>

      {dialog && dialog.kind !== 'create' && (
        <>
          <FormModal
            open={dialog.kind === 'roles'}
            heading={t('rolesOf', 'Roles of {{name}}', { name: dialog.user.person?.display })}
            submitText={t('save', 'Save')}
            done={t('rolesSaved', 'Roles saved')}
            onClose={close}
            onSubmit={() => setUserRoles(dialog.user.uuid, chosenRoles)}
          >
            <Choices legend={t('roles', 'Roles')} choices={roleChoices} chosen={chosenRoles} onChange={setChosenRoles} />
          </FormModal>
          <FormModal
            open={dialog.kind === 'password'}
            heading={t('passwordOf', 'New password for {{name}}', { name: dialog.user.person?.display })}
            submitText={t('save', 'Save')}
            done={t('passwordReset', 'Password changed; the open sessions of the account have ended')}
            onClose={close}
            onSubmit={async () => {
              await samePasswords();
              await resetPassword(dialog.user.uuid, password);
            }}
          >
            {passwordFields}
          </FormModal>
          <FormModal
            open={dialog.kind === 'retire'}
            danger
            heading={t('retireAccount', 'Retire the account of {{name}}', { name: dialog.user.person?.display })}
            submitText={t('retire', 'Retire')}
            done={t('accountRetired', 'Account retired; its sessions have ended')}
            onClose={close}
            onSubmit={() => retireUser(dialog.user.uuid, reason || t('defaultRetireReason', 'left the facility'))}
          >
            <TextInput id="account-retire-reason" labelText={t('reason', 'Reason')} value={reason} onChange={(e) => setReason(e.target.value)} />
          </FormModal>
        </>
      )}
    </section>
  );
}
