import React, { useState } from 'react';
import {
  Button,
  InlineLoading,
  InlineNotification,
  RadioButton,
  RadioButtonGroup,
  Table,
  TableBody,
  TableCell,
  TableHead,
  TableHeader,
  TableRow,
  Tag,
} from '@carbon/react';
import { useTranslation } from 'react-i18next';
import { type DuplicatePair, type PatientSummary, explainMerge, mergePatients, useDuplicates } from './api';
import { FormModal } from './shared.component';
import styles from './accounts.scss';

/** One patient in a line of the list: her name and her preferred identifier. */
function Who({ p }: { p: PatientSummary }) {
  const id = p.identifiers.find((i) => i.preferred) ?? p.identifiers[0];
  return (
    <div>
      <strong>{p.person.preferredName?.display ?? p.display}</strong>
      <div className="cds--label">{id?.display}</div>
    </div>
  );
}

/**
 * The likely duplicates the server finds (same names in any order, same telephone, same
 * identifier), each pair compared side by side before the data manager chooses the record
 * to keep and merges the other into it.
 */
export default function DuplicatesPanel() {
  const { t } = useTranslation();
  const { items: pairs, error, isLoading, mutate } = useDuplicates();
  const [pair, setPair] = useState<DuplicatePair | null>(null);
  const [preferred, setPreferred] = useState<'A' | 'B'>('A');
  const reason = (r: string) =>
    ({
      name: t('sameName', 'Same name'),
      phone: t('samePhone', 'Same telephone'),
      identifier: t('sameIdentifier', 'Same identifier'),
      birthdate: t('sameBirthdate', 'Same birth date'),
      gender: t('sameSex', 'Same sex'),
    })[r] ?? r;
  const sex = (g: string) => ({ M: t('male', 'Male'), F: t('female', 'Female') })[g] ?? t('unknownSex', 'Unknown');
  const rows = (p: PatientSummary) => [
    p.person.names.map((n) => n.display).join(' · '),
    p.identifiers.map((i) => i.display).join(' · '),
    sex(p.person.gender),
    p.person.birthdate
      ? `${p.person.birthdate.slice(0, 10)}${p.person.birthdateEstimated ? ` (${t('estimated', 'estimated')})` : ''}`
      : '—',
    p.person.preferredAddress?.display ||
      [p.person.preferredAddress?.cityVillage, p.person.preferredAddress?.stateProvince].filter(Boolean).join(', ') ||
      '—',
    p.person.attributes.map((a) => a.display).join(' · ') || '—',
  ];
  const labels = [t('names', 'Names'), t('identifiers', 'Identifiers'), t('sex', 'Sex'), t('birthdate', 'Birth date'), t('address', 'Address'), t('attributes', 'Attributes')];

  return (
    <section>
      <p className={styles.hint}>
        {t('duplicatesHint', 'Patients who may be the same person. Compare them, choose the record to keep: the other record\'s visits, encounters, orders and every other record move to it, and the other is voided.')}
      </p>
      {isLoading && <InlineLoading description={t('loading', 'Loading…')} />}
      {error && <InlineNotification kind="error" lowContrast hideCloseButton title={t('loadFailed', 'Could not load')} subtitle={error.message} />}
      {!isLoading && !error && pairs.length === 0 && <p>{t('noDuplicates', 'No likely duplicates.')}</p>}
      {pairs.length > 0 && (
        <Table size="md" useZebraStyles>
          <TableHead>
            <TableRow>
              <TableHeader>{t('firstRecord', 'First record')}</TableHeader>
              <TableHeader>{t('secondRecord', 'Second record')}</TableHeader>
              <TableHeader>{t('inCommon', 'In common')}</TableHeader>
              <TableHeader>{t('actions', 'Actions')}</TableHeader>
            </TableRow>
          </TableHead>
          <TableBody>
            {pairs.map((p) => (
              <TableRow key={`${p.patientA.uuid}-${p.patientB.uuid}`}>
                <TableCell>
                  <Who p={p.patientA} />
                </TableCell>
                <TableCell>
                  <Who p={p.patientB} />
                </TableCell>
                <TableCell>
                  {p.reasons.map((r) => (
                    <Tag key={r} type="blue">
                      {reason(r)}
                    </Tag>
                  ))}
                </TableCell>
                <TableCell>
                  <Button kind="ghost" size="sm" onClick={() => { setPreferred('A'); setPair(p); }}>
                    {t('compare', 'Compare')}
                  </Button>
                </TableCell>
              </TableRow>
            ))}
          </TableBody>
        </Table>
      )}
      <FormModal
        heading={t('compareAndMerge', 'Compare and merge')}
        submitText={t('merge', 'Merge')}
        done={t('recordsMerged', 'Records merged')}
        open={pair !== null}
        danger
        explainError={(e) => explainMerge(e, t)}
        onClose={() => {
          setPair(null);
          mutate();
        }}
        onSubmit={() =>
          preferred === 'A'
            ? mergePatients(pair.patientA.uuid, pair.patientB.uuid)
            : mergePatients(pair.patientB.uuid, pair.patientA.uuid)
        }
      >
        {pair && (
          <>
            <Table size="sm">
              <TableHead>
                <TableRow>
                  <TableHeader />
                  <TableHeader>{t('firstRecord', 'First record')}</TableHeader>
                  <TableHeader>{t('secondRecord', 'Second record')}</TableHeader>
                </TableRow>
              </TableHead>
              <TableBody>
                {labels.map((label, i) => (
                  <TableRow key={label}>
                    <TableCell>{label}</TableCell>
                    <TableCell>{rows(pair.patientA)[i]}</TableCell>
                    <TableCell>{rows(pair.patientB)[i]}</TableCell>
                  </TableRow>
                ))}
              </TableBody>
            </Table>
            <RadioButtonGroup
              legendText={t('recordToKeep', 'Record to keep')}
              name="preferred"
              valueSelected={preferred}
              onChange={(v) => setPreferred(v as 'A' | 'B')}
            >
              <RadioButton id="keep-a" value="A" labelText={t('keepFirst', 'The first record')} />
              <RadioButton id="keep-b" value="B" labelText={t('keepSecond', 'The second record')} />
            </RadioButtonGroup>
          </>
        )}
      </FormModal>
    </section>
  );
}
