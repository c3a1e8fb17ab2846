//! User accounts and system settings in the store: their records, the username index, and
//! the generation-checked caches of decoded records every request reads.

use super::*;

impl Store {
    /// Every user account (a facility has tens; providers are read from them).
    pub fn users(&self) -> StoreResult<Vec<UserRecord>> {
        let txn = self.begin_read()?;
        let t = txn.open_table(USERS)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (_, v) = row?;
            out.push(decode("users", v.value())?);
        }
        Ok(out)
    }

    // Users.

    pub fn user_count(&self) -> StoreResult<u64> {
        let txn = self.begin_read()?;
        txn.open_table(USERS)?.len()
    }

    pub fn user(&self, uuid: &str) -> StoreResult<Option<UserRecord>> {
        Ok(self.user_shared(uuid)?.map(|u| (*u).clone()))
    }

    /// A user by uuid, shared from the cache when it is there.
    pub fn user_shared(&self, uuid: &str) -> StoreResult<Option<Arc<UserRecord>>> {
        if let Some(Some(u)) = self.users_by_uuid.get(uuid) {
            return Ok(Some(u));
        }
        let read_at = self.users_by_uuid.generation();
        let txn = self.begin_read()?;
        let t = txn.open_table(USERS)?;
        let Some(user) = t
            .get(uuid)?
            .map(|v| decode("users", v.value()))
            .transpose()?
        else {
            return Ok(None);
        };
        let user = Arc::new(user);
        self.users_by_uuid.remember(read_at, uuid, Some(&user));
        Ok(Some(user))
    }

    pub fn user_by_username(&self, username: &str) -> StoreResult<Option<UserRecord>> {
        Ok(self
            .user_by_username_shared(username)?
            .map(|u| (*u).clone()))
    }

    /// A user by username or system id (any case), shared from the cache when it is there.
    pub fn user_by_username_shared(&self, username: &str) -> StoreResult<Option<Arc<UserRecord>>> {
        let key = username.to_lowercase();
        if let Some(Some(u)) = self.users_by_name.get(&key) {
            return Ok(Some(u));
        }
        let read_at = self.users_by_name.generation();
        let txn = self.begin_read()?;
        let names = txn.open_table(USERNAMES)?;
        let Some(uuid) = names.get(key.as_str())?.map(|v| v.value().to_string()) else {
            return Ok(None);
        };
        let t = txn.open_table(USERS)?;
        let Some(user) = t
            .get(uuid.as_str())?
            .map(|v| decode("users", v.value()))
            .transpose()?
        else {
            return Ok(None);
        };
        let user = Arc::new(user);
        self.users_by_name.remember(read_at, &key, Some(&user));
        Ok(Some(user))
    }

    pub fn put_user(&self, user: &UserRecord) -> StoreResult<()> {
        let written = self.write(|txn| write_user(txn, user));
        self.forget_users();
        written
    }

    /// Removes a user account for good, with its username and system id.
    pub fn remove_user(&self, user: &UserRecord) -> StoreResult<()> {
        let written = self.write(|txn| {
            txn.open_table(USERS)?.remove(user.uuid.as_str())?;
            let mut names = txn.open_table(USERNAMES)?;
            for name in [&user.username, &user.system_id] {
                let key = name.to_lowercase();
                if !key.is_empty()
                    && names
                        .get(key.as_str())?
                        .is_some_and(|v| v.value() == user.uuid)
                {
                    names.remove(key.as_str())?;
                }
            }
            Ok(())
        });
        self.forget_users();
        written
    }

    /// Records a new username for a user (the old one stops logging in).
    pub fn rename_user(&self, user: &UserRecord, old_username: &str) -> StoreResult<()> {
        let written = self.write(|txn| {
            {
                let mut names = txn.open_table(USERNAMES)?;
                let old = old_username.to_lowercase();
                if names
                    .get(old.as_str())?
                    .is_some_and(|v| v.value() == user.uuid)
                {
                    names.remove(old.as_str())?;
                }
            }
            write_user(txn, user)
        });
        self.forget_users();
        written
    }

    // Patients.

    // System settings.

    pub fn settings(&self) -> StoreResult<Vec<SettingRecord>> {
        let txn = self.begin_read()?;
        let t = txn.open_table(SETTINGS)?;
        let mut out = Vec::new();
        for row in t.iter()? {
            let (_, v) = row?;
            out.push(decode("settings", v.value())?);
        }
        Ok(out)
    }

    pub fn setting(&self, property: &str) -> StoreResult<Option<SettingRecord>> {
        Ok(self.setting_shared(property)?.map(|s| (*s).clone()))
    }

    /// An API-made setting value, shared from the cache when it is there.
    pub fn setting_shared(&self, property: &str) -> StoreResult<Option<Arc<SettingRecord>>> {
        if let Some(found) = self.settings.get(property) {
            return Ok(found);
        }
        let read_at = self.settings.generation();
        let txn = self.begin_read()?;
        let t = txn.open_table(SETTINGS)?;
        let found = t
            .get(property)?
            .map(|v| decode("settings", v.value()))
            .transpose()?
            .map(Arc::new);
        self.settings.remember(read_at, property, found.as_ref());
        Ok(found)
    }

    pub fn put_setting(&self, s: &SettingRecord) -> StoreResult<()> {
        let written = self.write(|txn| {
            txn.open_table(SETTINGS)?
                .insert(s.property.as_str(), encode(s).as_slice())?;
            Ok(())
        });
        self.settings.invalidate();
        self.count_cache_change();
        written
    }

    /// Removes API-made values; returns the properties removed.
    pub fn remove_settings(&self, properties: &[String]) -> StoreResult<Vec<String>> {
        let removed = self.write(|txn| {
            let mut removed = Vec::new();
            let mut t = txn.open_table(SETTINGS)?;
            for p in properties {
                if t.remove(p.as_str())? {
                    removed.push(p.clone());
                }
            }
            Ok(removed)
        });
        self.settings.invalidate();
        self.count_cache_change();
        removed
    }

    // Sessions shared by the runtimes of one database.

    pub fn session(&self, id: &str) -> StoreResult<Option<SessionRecord>> {
        let txn = self.begin_read()?;
        let t = txn.open_table(SESSIONS)?;
        t.get(id)?
            .map(|v| decode("sessions", v.value()))
            .transpose()
    }

    pub fn put_session(&self, id: &str, session: &SessionRecord) -> StoreResult<()> {
        self.write(|txn| {
            txn.open_table(SESSIONS)?
                .insert(id, encode(session).as_slice())?;
            Ok(())
        })
    }

    /// Ends sessions: `id` alone, or every one of `user` but `keep`, and those idle or
    /// older than allowed (`expired`).
    pub fn remove_sessions(
        &self,
        id: Option<&str>,
        user: Option<(&str, Option<&str>)>,
        expired: impl Fn(&SessionRecord) -> bool,
    ) -> StoreResult<()> {
        self.write(|txn| {
            let mut t = txn.open_table(SESSIONS)?;
            let mut gone = Vec::new();
            for row in t.iter()? {
                let (k, v) = row?;
                let s: SessionRecord = decode("sessions", v.value())?;
                let key = k.value();
                let of_user = user.is_some_and(|(u, keep)| s.user_uuid == u && keep != Some(key));
                if Some(key) == id || of_user || expired(&s) {
                    gone.push(key.to_string());
                }
            }
            for key in gone {
                t.remove(key.as_str())?;
            }
            Ok(())
        })
    }
}
