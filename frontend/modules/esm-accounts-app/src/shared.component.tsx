import React, { useId, useState } from 'react';
import { Checkbox, InlineNotification, Modal } from '@carbon/react';
import { showSnackbar } from '@openmrs/esm-framework';
import { useTranslation } from 'react-i18next';
import { type Ref, explain } from './api';
import styles from './accounts.scss';

/** A list of checkboxes, one per choice, keeping the chosen uuids. */
export function Choices({
  legend,
  choices,
  chosen,
  onChange,
}: {
  legend: string;
  choices: Array<Ref>;
  chosen: Array<string>;
  onChange: (uuids: Array<string>) => void;
}) {
  // Choices are keyed by uuid or by name (which may hold spaces): the inputs get ids of their own.
  const prefix = useId();
  return (
    <fieldset className={styles.choices}>
      <legend className="cds--label">{legend}</legend>
      {choices.map((c, i) => (
        <Checkbox
          key={c.uuid}
          id={`${prefix}-${i}`}
          labelText={c.display}
          checked={chosen.includes(c.uuid)}
          onChange={(_, { checked }) =>
            onChange(checked ? [...chosen, c.uuid] : chosen.filter((uuid) => uuid !== c.uuid))
          }
        />
      ))}
    </fieldset>
  );
}

/**
 * A modal form whose submission calls the server: the modal stays open with the server's
 * explanation when the request is refused, and closes with a confirmation when it succeeds.
 */
export function FormModal({
  heading,
  submitText,
  done,
  open,
  onClose,
  onSubmit,
  children,
  danger = false,
  explainError = explain,
}: {
  heading: string;
  submitText: string;
  done: string;
  open: boolean;
  onClose: () => void;
  onSubmit: () => Promise<unknown>;
  children: React.ReactNode;
  danger?: boolean;
  /** How a refusal is told (the server's explanation, by default). */
  explainError?: (e: unknown) => string;
}) {
  const { t } = useTranslation();
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const close = () => {
    setError(null);
    onClose();
  };
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      await onSubmit();
      showSnackbar({ kind: 'success', title: done, isLowContrast: true });
      close();
    } catch (e) {
      setError(explainError(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <Modal
      open={open}
      danger={danger}
      modalHeading={heading}
      primaryButtonText={submitText}
      secondaryButtonText={t('cancel', 'Cancel')}
      primaryButtonDisabled={busy}
      onRequestClose={close}
      onRequestSubmit={submit}
      selectorPrimaryFocus="input"
      size="md"
    >
      <div className={styles.form}>
        {error && (
          <InlineNotification kind="error" lowContrast hideCloseButton title={t('refused', 'Not saved')} subtitle={error} />
        )}
        {open && children}
      </div>
    </Modal>
  );
}

/**
 * A one-click change (reactivate, retire a role): done, it is confirmed and the list
 * refreshed; refused, the server's explanation is shown.
 */
export function useQuickAction(refresh: () => unknown) {
  const { t } = useTranslation();
  return (action: () => Promise<unknown>, done: string) =>
    action()
      .then(() => showSnackbar({ kind: 'success', title: done, isLowContrast: true }))
      .catch((e) => showSnackbar({ kind: 'error', title: t('refused', 'Not saved'), subtitle: explain(e) }))
      .finally(() => refresh());
}
