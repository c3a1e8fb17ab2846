import React, { useState } from 'react';
import {
  Button,
  InlineLoading,
  InlineNotification,
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
import { type Role, createRole, retireRole, updateRole, usePrivileges, useRoles } from './api';
import { Choices, FormModal, useQuickAction } from './shared.component';
import styles from './accounts.scss';

/**
 * Roles: the content package's are shown read-only (the server refuses changes to them);
 * roles made here can be changed and retired.
 */
export default function RolesPanel() {
  const { t } = useTranslation();
  const { items: roles, error, isLoading, mutate } = useRoles();
  const { items: privileges, error: privilegesError } = usePrivileges();
  const quick = useQuickAction(mutate);
  const [editing, setEditing] = useState<Role | 'new' | null>(null);
  // Kept once the dialog closes, so that its heading does not change while it fades out.
  const [creating, setCreating] = useState(true);
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [chosenPrivileges, setChosenPrivileges] = useState<Array<string>>([]);
  const [chosenRoles, setChosenRoles] = useState<Array<string>>([]);

  const open = (r: Role | 'new') => {
    setName(r === 'new' ? '' : r.name);
    setDescription(r === 'new' ? '' : r.description ?? '');
    setChosenPrivileges(r === 'new' ? [] : r.privileges.map((p) => p.display));
    setChosenRoles(r === 'new' ? [] : r.inheritedRoles.map((x) => x.display).filter((name) => roles.some((y) => y.name === name && !y.retired)));
    setCreating(r === 'new');
    setEditing(r);
  };
  const close = () => {
    setEditing(null);
    mutate();
  };
  // Privileges and roles are sent by name, which the server resolves for both kinds.
  const privilegeChoices = privileges.map((p) => ({ uuid: p.display, display: p.display }));
  const roleChoices = roles
    .filter((r) => !r.retired && (editing === 'new' || editing?.uuid !== r.uuid))
    .map((r) => ({ uuid: r.name, display: r.name }));

  return (
    <section>
      <div className={styles.toolbar}>
        <Button onClick={() => open('new')}>{t('createRole', 'Create a role')}</Button>
      </div>
      {isLoading && <InlineLoading description={t('loading', 'Loading…')} />}
      {(error || privilegesError) && (
        <InlineNotification kind="error" lowContrast hideCloseButton title={t('loadFailed', 'Could not load')} subtitle={(error ?? privilegesError).message} />
      )}
      <Table size="md" useZebraStyles>
        <TableHead>
          <TableRow>
            <TableHeader>{t('role', 'Role')}</TableHeader>
            <TableHeader>{t('description', 'Description')}</TableHeader>
            <TableHeader>{t('inheritedRoles', 'Inherited roles')}</TableHeader>
            <TableHeader>{t('privilegeCount', 'Privileges')}</TableHeader>
            <TableHeader>{t('definedBy', 'Defined by')}</TableHeader>
            <TableHeader>{t('actions', 'Actions')}</TableHeader>
          </TableRow>
        </TableHead>
        <TableBody>
          {roles.map((r) => (
            <TableRow key={r.uuid}>
              <TableCell>{r.name}</TableCell>
              <TableCell>{r.description}</TableCell>
              <TableCell>{r.inheritedRoles.map((x) => x.display).join(', ')}</TableCell>
              <TableCell>{r.privileges.length}</TableCell>
              <TableCell>
                {r.definedBy === 'content' ? (
                  <Tag type="blue">{t('contentPackage', 'Content package')}</Tag>
                ) : (
                  <Tag type="purple">{t('thisServer', 'This server')}</Tag>
                )}
                {r.retired && <Tag type="gray">{t('retired', 'Retired')}</Tag>}
              </TableCell>
              <TableCell>
                {r.definedBy === 'api' && !r.retired && (
                  <div className={styles.actions}>
                    <Button kind="ghost" size="sm" onClick={() => open(r)}>
                      {t('edit', 'Edit')}
                    </Button>
                    <Button kind="danger--ghost" size="sm" onClick={() => quick(() => retireRole(r.uuid), t('roleRetired', 'Role retired'))}>
                      {t('retire', 'Retire')}
                    </Button>
                  </div>
                )}
              </TableCell>
            </TableRow>
          ))}
        </TableBody>
      </Table>
      <FormModal
        open={editing !== null}
        heading={creating ? t('createRole', 'Create a role') : t('editRole', 'Edit the role {{name}}', { name })}
        submitText={creating ? t('create', 'Create') : t('save', 'Save')}
        done={t('roleSaved', 'Role saved')}
        onClose={close}
        onSubmit={() => {
          const change = { description, privileges: chosenPrivileges, inheritedRoles: chosenRoles };
          return editing === 'new' ? createRole({ name, ...change }) : updateRole((editing as Role).uuid, change);
        }}
      >
        {editing === 'new' && (
          <TextInput id="role-name" labelText={t('roleName', 'Name of the role')} value={name} onChange={(e) => setName(e.target.value)} />
        )}
        <TextInput id="role-description" labelText={t('description', 'Description')} value={description} onChange={(e) => setDescription(e.target.value)} />
        <Choices legend={t('inheritedRoles', 'Inherited roles')} choices={roleChoices} chosen={chosenRoles} onChange={setChosenRoles} />
        <Choices legend={t('privilegeCount', 'Privileges')} choices={privilegeChoices} chosen={chosenPrivileges} onChange={setChosenPrivileges} />
      </FormModal>
    </section>
  );
}
