import React, { useCallback } from 'react';
import { useTranslation } from 'react-i18next';
import { OverflowMenuItem } from '@carbon/react';
import { restBaseUrl, useSession, userHasAccess } from '@openmrs/esm-framework';

/** The privilege the patient documents module asks of whoever prints a sticker. */
const PRINT_STICKER = 'App: Can generate a Patient Identity Sticker';

interface Props {
  patientUuid?: string;
  patient?: { id?: string };
  closeMenu?: () => void;
}

/**
 * "Print identifier sticker" in the patient banner's actions: opens the sticker's PDF in a
 * new tab, where the browser's viewer prints it on the desk's label printer. Shown only to
 * those holding the privilege the server checks.
 */
export function PrintStickerMenuItem({ patientUuid, patient, closeMenu }: Props) {
  const { t } = useTranslation();
  const session = useSession();
  const uuid = patientUuid ?? patient?.id;
  const print = useCallback(() => {
    const base = window.openmrsBase.replace(/\/$/, '');
    const url = `${base}${restBaseUrl}/patientdocuments/patientIdSticker?patientUuid=${encodeURIComponent(uuid)}&inline=true`;
    window.open(url, '_blank', 'noopener');
    closeMenu?.();
  }, [uuid, closeMenu]);
  if (!uuid || !session?.user || !userHasAccess(PRINT_STICKER, session.user)) {
    return null;
  }
  return (
    <OverflowMenuItem
      itemText={t('printIdentifierSticker', 'Print identifier sticker')}
      onClick={print}
      closeMenu={closeMenu}
    />
  );
}
