//! Patients in the store: records, the identifier uniqueness index, and the search
//! projection written with every patient.

use super::*;

impl Store {
    /// Stores a new patient; refuses it if one of its unique identifiers is taken.
    /// `keys` are the uniqueness keys of its identifiers (see `identifier_key`).
    pub fn insert_patient(&self, p: &PatientRecord, keys: &[(String, String)]) -> StoreResult<()> {
        self.write(|txn| {
            let mut ids = txn.open_table(IDENTIFIERS)?;
            for (key, identifier) in keys {
                if let Some(owner) = ids.get(key.as_str())?
                    && owner.value() != p.uuid
                {
                    return Err(StoreError::IdentifierInUse(identifier.clone()));
                }
            }
            for (key, _) in keys {
                ids.insert(key.as_str(), p.uuid.as_str())?;
            }
            write_patient(txn, p)
        })
    }

    /// Stores many patients in one transaction (restores and benchmarks), with the same
    /// uniqueness rule as `insert_patient`; nothing is stored if one is refused.
    pub fn import_patients(
        &self,
        patients: &[(PatientRecord, Vec<(String, String)>)],
    ) -> StoreResult<()> {
        self.write(|txn| {
            let mut ids = txn.open_table(IDENTIFIERS)?;
            let mut table = txn.open_table(PATIENTS)?;
            let mut search = txn.open_table(PATIENT_SEARCH)?;
            let mut by_updated = txn.open_table(PATIENTS_BY_UPDATED)?;
            for (p, keys) in patients {
                for (key, identifier) in keys {
                    if let Some(owner) = ids.get(key.as_str())?
                        && owner.value() != p.uuid
                    {
                        return Err(StoreError::IdentifierInUse(identifier.clone()));
                    }
                    ids.insert(key.as_str(), p.uuid.as_str())?;
                }
                let before = table
                    .get(p.uuid.as_str())?
                    .map(|v| updated_entry(v.value()))
                    .transpose()?;
                table.insert(p.uuid.as_str(), encode(p).as_slice())?;
                if let Some((old, _)) = before {
                    by_updated.remove(old.as_str())?;
                }
                let (key, flags) = updated_entry_of(p);
                by_updated.insert(key.as_str(), flags)?;
                search.insert(
                    p.uuid.as_str(),
                    crate::store::projection::projection(p).as_slice(),
                )?;
            }
            Ok(())
        })
    }

    /// Replaces a stored patient whose identifiers may have changed: the uniqueness keys
    /// it no longer holds are freed, new ones are refused when another patient holds them.
    pub fn replace_patient(
        &self,
        p: &PatientRecord,
        old_keys: &[String],
        new_keys: &[(String, String)],
    ) -> StoreResult<()> {
        self.write(|txn| {
            let mut ids = txn.open_table(IDENTIFIERS)?;
            for (key, identifier) in new_keys {
                if let Some(owner) = ids.get(key.as_str())?
                    && owner.value() != p.uuid
                {
                    return Err(StoreError::IdentifierInUse(identifier.clone()));
                }
            }
            for key in old_keys {
                // A key another patient holds is not this one's to free: a merged
                // patient's identifiers are the kept patient's.
                let owned = ids
                    .get(key.as_str())?
                    .is_some_and(|owner| owner.value() == p.uuid);
                if owned && !new_keys.iter().any(|(k, _)| k == key) {
                    ids.remove(key.as_str())?;
                }
            }
            for (key, _) in new_keys {
                ids.insert(key.as_str(), p.uuid.as_str())?;
            }
            write_patient(txn, p)
        })
    }

    /// Writes a merge in one transaction: the records moved to the preferred patient
    /// (`rewrites`), the preferred patient as merged, and the non-preferred one voided; the
    /// uniqueness keys the non-preferred patient's identifiers held (`moved_keys`) are the
    /// preferred patient's from then on.
    pub fn write_merge(
        &self,
        preferred: &PatientRecord,
        non_preferred: &PatientRecord,
        moved_keys: &[String],
        rewrites: &[crate::store::record::Rewrite],
    ) -> StoreResult<()> {
        self.write(|txn| {
            crate::store::record::rewrite_all(txn, rewrites)?;
            let mut ids = txn.open_table(IDENTIFIERS)?;
            for key in moved_keys {
                ids.insert(key.as_str(), preferred.uuid.as_str())?;
            }
            drop(ids);
            write_patient(txn, preferred)?;
            write_patient(txn, non_preferred)
        })
    }

    /// Replaces a stored patient whose identifiers did not change (a void).
    pub fn update_patient(&self, p: &PatientRecord) -> StoreResult<()> {
        self.write(|txn| write_patient(txn, p))
    }

    /// Removes a patient and frees its identifiers. The caller has checked that nothing
    /// clinical refers to it.
    pub fn purge_patient(&self, uuid: &str) -> StoreResult<()> {
        self.write(|txn| {
            let mut ids = txn.open_table(IDENTIFIERS)?;
            // Purging is rare: a scan finds the identifiers whatever the content's
            // uniqueness rules were when they were stored.
            let keys: Vec<String> = ids
                .iter()?
                .filter_map(|row| {
                    let (k, v) = row.ok()?;
                    (v.value() == uuid).then(|| k.value().to_string())
                })
                .collect();
            for k in keys {
                ids.remove(k.as_str())?;
            }
            let mut table = txn.open_table(PATIENTS)?;
            let removed = table
                .get(uuid)?
                .map(|v| updated_entry(v.value()))
                .transpose()?;
            table.remove(uuid)?;
            drop(table);
            if let Some((key, _)) = removed {
                txn.open_table(PATIENTS_BY_UPDATED)?.remove(key.as_str())?;
            }
            txn.open_table(PATIENT_SEARCH)?.remove(uuid)?;
            for derived in self.registry().on_patient_purged {
                derived(txn, uuid)?;
            }
            Ok(())
        })
    }

    pub fn patient(&self, uuid: &str) -> StoreResult<Option<PatientRecord>> {
        let txn = self.begin_read()?;
        let t = txn.open_table(PATIENTS)?;
        t.get(uuid)?
            .map(|v| decode("patients", v.value()))
            .transpose()
    }

    /// A patient in the caller's read transaction (reports read many in one snapshot).
    pub fn patient_in(txn: &ReadTransaction, uuid: &str) -> StoreResult<Option<PatientRecord>> {
        txn.open_table(PATIENTS)?
            .get(uuid)?
            .map(|v| decode("patients", v.value()))
            .transpose()
    }

    /// A patient read as `T`, any type naming some of the record's fields (a report's tests
    /// need a few of them, for every patient seen in a month), in the caller's read
    /// transaction.
    pub fn patient_as_in<T: serde::de::DeserializeOwned>(
        txn: &ReadTransaction,
        uuid: &str,
    ) -> StoreResult<Option<T>> {
        txn.open_table(PATIENTS)?
            .get(uuid)?
            .map(|v| decode("patients", v.value()))
            .transpose()
    }

    /// The uuids of the patients marked dead, voided ones left out, in the caller's read
    /// transaction: read from the search projections (a few bytes a patient), or from the
    /// records while the projections are being rebuilt.
    pub fn dead_patient_uuids_in(txn: &ReadTransaction) -> StoreResult<Vec<String>> {
        let search = txn.open_table(PATIENT_SEARCH)?;
        let records = txn.open_table(PATIENTS)?;
        let table = if search.len()? == records.len()? {
            search
        } else {
            records
        };
        // Both spell a dead patient `"dead":true` (a projection leaves a living one's out);
        // no name or identifier can, its quotes being escaped. Only those are parsed.
        const DEAD: &[u8] = br#""dead":true"#;
        let mut out = Vec::new();
        for row in table.iter()? {
            let (_, v) = row?;
            let bytes = v.value();
            if !bytes.windows(DEAD.len()).any(|w| w == DEAD) {
                continue;
            }
            let p: projection::Searchable =
                serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
                    table: "patient_search",
                    detail: e.to_string(),
                })?;
            if p.dead && !p.voided {
                out.push(p.uuid.into_owned());
            }
        }
        Ok(out)
    }

    /// Every stored patient's uuid (keys only), in the caller's read transaction.
    pub fn patient_uuids_in(txn: &ReadTransaction) -> StoreResult<Vec<String>> {
        let mut out = Vec::new();
        for row in txn.open_table(PATIENTS)?.iter()? {
            out.push(row?.0.value().to_string());
        }
        Ok(out)
    }

    pub fn patient_exists(&self, uuid: &str) -> StoreResult<bool> {
        let txn = self.begin_read()?;
        Ok(txn.open_table(PATIENTS)?.get(uuid)?.is_some())
    }

    /// The stored patients among `uuids`, in their order, to show (search pages): from the
    /// cache of decoded records where they are, the others read in one transaction; a uuid
    /// no longer stored (purged meanwhile) is skipped. Not for a read-check-write: on a
    /// shared database another runtime's change reaches the cache by a notice, a moment
    /// after its commit, so writes read records with `patient`.
    pub fn patients_in(&self, uuids: &[&str]) -> StoreResult<Vec<Arc<PatientRecord>>> {
        let mut found: Vec<Option<Arc<PatientRecord>>> = uuids
            .iter()
            .map(|u| self.patients.get(u).flatten())
            .collect();
        let missing: Vec<&str> = uuids
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.is_none())
            .map(|(u, _)| *u)
            .collect();
        if !missing.is_empty() {
            let read_at = self.patients.generation();
            let txn = self.begin_read()?;
            let t = txn.open_table(PATIENTS)?;
            let mut read = std::collections::HashMap::with_capacity(missing.len());
            for v in t.get_many(&missing)?.into_iter().flatten() {
                let p: Arc<PatientRecord> = Arc::new(decode("patients", v.value())?);
                self.patients.remember(read_at, &p.uuid, Some(&p));
                read.insert(p.uuid.clone(), p);
            }
            for (slot, u) in found.iter_mut().zip(uuids) {
                if slot.is_none() {
                    *slot = read.get(*u).cloned();
                }
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// Hands every stored patient's search projection (`projection::projection`) to `f`, in
    /// one read transaction. A store whose projections are missing or incomplete (written
    /// by an earlier version, or restored from a backup, which carries records only) has
    /// them rebuilt from the records first, once. If that write fails (a full disk), `f`
    /// gets the whole records instead, which read as projections too: search still works.
    pub fn scan_patient_search(
        &self,
        mut f: impl FnMut(&[u8]) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let complete = {
            let txn = self.begin_read()?;
            txn.open_table(PATIENT_SEARCH)?.len()? == txn.open_table(PATIENTS)?.len()?
        };
        let table = if complete {
            PATIENT_SEARCH
        } else {
            match self.rebuild_patient_search() {
                Ok(()) => PATIENT_SEARCH,
                Err(e) => {
                    tracing::warn!(
                        "the patients' search projection could not be rebuilt ({e}); \
                         the search index is read from the records"
                    );
                    PATIENTS
                }
            }
        };
        let txn = self.begin_read()?;
        for row in txn.open_table(table)?.iter()? {
            let (_, v) = row?;
            f(v.value())?;
        }
        Ok(())
    }

    fn rebuild_patient_search(&self) -> StoreResult<()> {
        self.write(|txn| {
            txn.delete_table(PATIENT_SEARCH)?;
            let mut search = txn.open_table(PATIENT_SEARCH)?;
            for row in txn.open_table(PATIENTS)?.iter()? {
                let (k, v) = row?;
                let projected = crate::store::projection::projection_of_stored(v.value())?;
                search.insert(k.value(), projected.as_slice())?;
            }
            Ok(())
        })
    }

    /// The patients whose last change (`meta.lastUpdated`) falls within `from..=to` (key
    /// form, each bound optional), oldest first, voided ones left out: the window of those
    /// `keep` accepts (it may read the record, in the same read transaction), from the
    /// index by last change, never a scan of every patient.
    pub fn patients_updated_between(
        &self,
        from: Option<&str>,
        to: Option<&str>,
        window: record::Window,
        mut keep: impl FnMut(&ReadTransaction, &str) -> StoreResult<bool>,
    ) -> StoreResult<record::Page> {
        let txn = self.begin_read()?;
        let index = txn.open_table(PATIENTS_BY_UPDATED)?;
        let mut failed = None;
        let page =
            record::scan_where_between(&index, "all", from, to, false, window, |k, flags| {
                if flags & 1 != 0 || failed.is_some() {
                    return false;
                }
                match keep(&txn, record::uuid_of(k)) {
                    Ok(kept) => kept,
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            })?;
        match failed {
            Some(e) => Err(e),
            None => Ok(page),
        }
    }

    /// Every patient, decoded (tests and tools; the server never loads them all).
    pub fn patients(&self) -> StoreResult<Vec<PatientRecord>> {
        let txn = self.begin_read()?;
        let t = txn.open_table(PATIENTS)?;
        let mut out = Vec::with_capacity(t.len()? as usize);
        for row in t.iter()? {
            let (_, v) = row?;
            out.push(decode("patients", v.value())?);
        }
        Ok(out)
    }
}
