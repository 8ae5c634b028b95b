//! The CRM's memory: every object by type and id (a simulator may keep
//! state in memory; nothing here stands in for Kafka or Postgres), and the
//! write counters tests assert on: writes per type, writes per
//! `callstream_op_id` value, and creates that repeated an op id (the
//! duplicates a client without idempotency keys risks).
//!
//! One mutex, held for short sections only; writes are applied whole.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::CrmError;
use crate::objects::{Association, CrmObject, ObjectType};
use crate::properties::PropertyDef;
use crate::search::SearchBody;

/// Creates and updates of one type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TypeWrites {
    pub created: u64,
    pub updated: u64,
}

/// The write counters of `GET /_sim/stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct WriteStats {
    pub writes: BTreeMap<&'static str, TypeWrites>,
    /// Writes (creates and updates) carrying each `callstream_op_id`.
    pub op_ids: BTreeMap<String, u64>,
    /// Op ids written more than once (any write).
    pub duplicate_op_ids: Vec<String>,
    /// Per type, creates beyond the first of the same op id: objects that
    /// exist twice.
    pub duplicate_creates: BTreeMap<&'static str, u64>,
    pub duplicate_creates_total: u64,
    /// Objects held, per type.
    pub objects: BTreeMap<&'static str, u64>,
    /// The search lags drawn for the objects created: median, p99, longest.
    pub search_lag_p50_ms: u64,
    pub search_lag_p99_ms: u64,
    pub search_lag_max_ms: u64,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    objects: HashMap<ObjectType, HashMap<String, CrmObject>>,
    /// Property definitions made through the properties API.
    properties: HashMap<ObjectType, BTreeMap<String, PropertyDef>>,
    /// (type, unique property, value) -> the object holding the value.
    unique: HashMap<(ObjectType, String, String), String>,
    /// Each created object's search lag.
    lags_ms: Vec<u64>,
    writes: BTreeMap<&'static str, TypeWrites>,
    op_writes: HashMap<String, u64>,
    op_creates: HashMap<(ObjectType, String), u64>,
}

impl Inner {
    /// The unique properties of `kind` that `properties` sets, with values.
    fn unique_values<'p>(
        &self,
        kind: ObjectType,
        properties: &'p BTreeMap<String, String>,
    ) -> Vec<(&'p str, &'p str)> {
        let Some(defs) = self.properties.get(&kind) else {
            return Vec::new();
        };
        properties
            .iter()
            .filter(|(name, value)| {
                !value.is_empty() && defs.get(*name).is_some_and(|d| d.has_unique_value)
            })
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect()
    }

    /// Refuses `properties` when another object than `id` holds one of their
    /// unique values: HubSpot's `409` with the holder's id.
    fn check_unique(
        &self,
        kind: ObjectType,
        id: Option<&str>,
        properties: &BTreeMap<String, String>,
    ) -> Result<(), CrmError> {
        for (name, value) in self.unique_values(kind, properties) {
            let key = (kind, name.to_string(), value.to_string());
            if let Some(holder) = self.unique.get(&key).filter(|h| Some(h.as_str()) != id) {
                return Err(CrmError::UniqueConflict {
                    kind,
                    property: name.to_string(),
                    value: value.to_string(),
                    existing_id: holder.clone(),
                });
            }
        }
        Ok(())
    }

    /// Records the unique values `o` holds (after a write).
    fn index_unique(&mut self, o: &CrmObject) {
        let held: Vec<(String, String)> = self
            .unique_values(o.kind, &o.properties)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        for (name, value) in held {
            self.unique.insert((o.kind, name, value), o.id.clone());
        }
    }

    fn count_op(&mut self, kind: ObjectType, op: Option<&str>, create: bool) {
        let Some(op) = op.filter(|o| !o.is_empty()) else {
            return;
        };
        *self.op_writes.entry(op.to_string()).or_default() += 1;
        if create {
            *self.op_creates.entry((kind, op.to_string())).or_default() += 1;
        }
    }
}

/// The object store; share it behind an `Arc`.
#[derive(Default)]
pub struct Db(Mutex<Inner>);

impl Db {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Counters may be half-updated after a panic, objects never are.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Creates an object; always a new one (no idempotency key), unless a
    /// unique property's value is taken: then HubSpot's `409`.
    pub fn create(
        &self,
        kind: ObjectType,
        properties: BTreeMap<String, String>,
        associations: Vec<Association>,
        now: DateTime<Utc>,
        searchable_at: Instant,
    ) -> Result<CrmObject, CrmError> {
        let mut g = self.lock();
        g.check_unique(kind, None, &properties)?;
        Ok(g.insert_new(kind, properties, associations, now, searchable_at))
    }

    /// Creates or updates, per input, the object whose unique property
    /// `id_property` holds `id` (HubSpot's `batch/upsert`): (object, new).
    pub fn upsert(
        &self,
        kind: ObjectType,
        id_property: &str,
        id: &str,
        mut properties: BTreeMap<String, String>,
        now: DateTime<Utc>,
        searchable_at: Instant,
    ) -> Result<(CrmObject, bool), CrmError> {
        let mut g = self.lock();
        let unique = g
            .properties
            .get(&kind)
            .and_then(|defs| defs.get(id_property))
            .is_some_and(|d| d.has_unique_value);
        if !unique {
            return Err(CrmError::Validation(format!(
                "{id_property} is not a unique identifier property of {}",
                kind.as_str()
            )));
        }
        properties.insert(id_property.to_string(), id.to_string());
        let key = (kind, id_property.to_string(), id.to_string());
        match g.unique.get(&key).cloned() {
            Some(existing) => {
                g.check_unique(kind, Some(&existing), &properties)?;
                Ok((g.apply_update(kind, &existing, properties, now)?, false))
            }
            None => {
                g.check_unique(kind, None, &properties)?;
                Ok((
                    g.insert_new(kind, properties, Vec::new(), now, searchable_at),
                    true,
                ))
            }
        }
    }

    /// The object whose unique property `name` holds `value`: seen at once,
    /// unlike search.
    pub fn get_by(&self, kind: ObjectType, name: &str, value: &str) -> Option<CrmObject> {
        let g = self.lock();
        let id = g.unique.get(&(kind, name.to_string(), value.to_string()))?;
        g.objects.get(&kind)?.get(id).cloned()
    }

    /// Defines a property; HubSpot answers `409` for a name already taken.
    pub fn define(&self, kind: ObjectType, def: PropertyDef) -> Result<PropertyDef, CrmError> {
        let mut g = self.lock();
        let defs = g.properties.entry(kind).or_default();
        if defs.contains_key(&def.name) {
            return Err(CrmError::PropertyExists { name: def.name });
        }
        defs.insert(def.name.clone(), def.clone());
        Ok(def)
    }

    pub fn property(&self, kind: ObjectType, name: &str) -> Option<PropertyDef> {
        self.lock().properties.get(&kind)?.get(name).cloned()
    }
}

impl Inner {
    /// Sets `properties` on the existing object `id` and counts the write.
    fn apply_update(
        &mut self,
        kind: ObjectType,
        id: &str,
        properties: BTreeMap<String, String>,
        now: DateTime<Utc>,
    ) -> Result<CrmObject, CrmError> {
        let op = properties.get(crate::objects::OP_ID_PROPERTY).cloned();
        let o = self
            .objects
            .get_mut(&kind)
            .and_then(|m| m.get_mut(id))
            .ok_or_else(|| CrmError::NotFound { id: id.into() })?;
        o.apply(properties, now);
        let updated = o.clone();
        self.index_unique(&updated);
        self.writes.entry(kind.as_str()).or_default().updated += 1;
        self.count_op(kind, op.as_deref(), false);
        Ok(updated)
    }

    fn insert_new(
        &mut self,
        kind: ObjectType,
        properties: BTreeMap<String, String>,
        associations: Vec<Association>,
        now: DateTime<Utc>,
        searchable_at: Instant,
    ) -> CrmObject {
        let g = self;
        let lag = searchable_at.saturating_duration_since(Instant::now());
        g.lags_ms
            .push(u64::try_from(lag.as_millis()).unwrap_or(u64::MAX));
        g.next_id += 1;
        let seq = g.next_id;
        // HubSpot's ids are large numbers; these look alike.
        let id = (100_000_000 + seq).to_string();
        let mut o = CrmObject::new(kind, id.clone(), seq, now, searchable_at);
        o.apply(properties, now);
        o.associations = associations;
        g.writes.entry(kind.as_str()).or_default().created += 1;
        g.count_op(kind, o.op_id(), true);
        g.index_unique(&o);
        g.objects.entry(kind).or_default().insert(id, o.clone());
        o
    }
}

impl Db {
    /// Updates an object's properties. A missing contact is created with
    /// that id when `create_missing` (the simulator's convenience).
    pub fn update(
        &self,
        kind: ObjectType,
        id: &str,
        properties: BTreeMap<String, String>,
        now: DateTime<Utc>,
        create_missing: bool,
    ) -> Result<CrmObject, CrmError> {
        let mut g = self.lock();
        g.check_unique(kind, Some(id), &properties)?;
        let exists = g.objects.get(&kind).is_some_and(|m| m.contains_key(id));
        if !exists {
            if !(create_missing && kind == ObjectType::Contacts) {
                return Err(CrmError::NotFound { id: id.into() });
            }
            g.next_id += 1;
            let seq = g.next_id;
            let fresh = CrmObject::new(kind, id.to_string(), seq, now, Instant::now());
            g.objects
                .entry(kind)
                .or_default()
                .insert(id.to_string(), fresh);
        }
        g.apply_update(kind, id, properties, now)
    }

    pub fn get(&self, kind: ObjectType, id: &str) -> Option<CrmObject> {
        self.lock().objects.get(&kind)?.get(id).cloned()
    }

    /// Matching objects search can see at `now`: (total, the page).
    pub fn search(
        &self,
        kind: ObjectType,
        body: &SearchBody,
        now: Instant,
    ) -> Result<(usize, Vec<CrmObject>), CrmError> {
        body.check()?;
        let (offset, limit) = body.page()?;
        let g = self.lock();
        let Some(objects) = g.objects.get(&kind) else {
            return Ok((0, Vec::new()));
        };
        let mut hits = Vec::new();
        for o in objects.values().filter(|o| o.searchable_at <= now) {
            if body.matches(o)? {
                hits.push(o);
            }
        }
        body.sort(&mut hits);
        let page = hits.iter().skip(offset).take(limit).map(|o| (*o).clone());
        Ok((hits.len(), page.collect()))
    }

    pub fn stats(&self) -> WriteStats {
        let g = self.lock();
        let mut duplicate_op_ids: Vec<String> = g
            .op_writes
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(op, _)| op.clone())
            .collect();
        duplicate_op_ids.sort_unstable();
        let mut duplicate_creates: BTreeMap<&'static str, u64> = BTreeMap::new();
        for ((kind, _), n) in &g.op_creates {
            if *n > 1 {
                *duplicate_creates.entry(kind.as_str()).or_default() += n - 1;
            }
        }
        let mut lags = g.lags_ms.clone();
        lags.sort_unstable();
        let quantile = |q: f64| {
            let last = lags.len().saturating_sub(1);
            lags.get(((last as f64) * q).round() as usize)
                .copied()
                .unwrap_or(0)
        };
        WriteStats {
            search_lag_p50_ms: quantile(0.5),
            search_lag_p99_ms: quantile(0.99),
            search_lag_max_ms: lags.last().copied().unwrap_or(0),
            writes: g.writes.clone(),
            op_ids: g.op_writes.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            duplicate_op_ids,
            duplicate_creates_total: duplicate_creates.values().sum(),
            duplicate_creates,
            objects: g
                .objects
                .iter()
                .map(|(k, m)| (k.as_str(), m.len() as u64))
                .collect(),
        }
    }

    pub fn reset(&self) {
        *self.lock() = Inner::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(op: &str) -> BTreeMap<String, String> {
        [
            ("callstream_op_id".to_string(), op.to_string()),
            ("hs_timestamp".to_string(), "1".to_string()),
        ]
        .into()
    }

    #[test]
    fn duplicates_are_counted_per_type_and_op() {
        let db = Db::default();
        let now = callstream_platform::clock::now_utc();
        let at = Instant::now();
        for op in ["a", "a", "a", "b"] {
            db.create(ObjectType::Tasks, props(op), vec![], now, at)
                .unwrap();
        }
        db.create(ObjectType::Notes, props("b"), vec![], now, at)
            .unwrap();
        let s = db.stats();
        assert_eq!(s.duplicate_creates.get("tasks"), Some(&2));
        assert_eq!(
            s.duplicate_creates.get("notes"),
            None,
            "b: one task, one note"
        );
        assert_eq!(s.duplicate_creates_total, 2);
        assert_eq!(s.op_ids["a"], 3);
        assert_eq!(s.duplicate_op_ids, vec!["a".to_string(), "b".to_string()]);
        assert_eq!(s.writes["tasks"].created, 4);
        assert_eq!(s.objects["tasks"], 4);
    }

    #[test]
    fn updates_need_the_object_unless_a_contact_may_be_created() {
        let db = Db::default();
        let now = callstream_platform::clock::now_utc();
        let p = || BTreeMap::from([("firstname".to_string(), "Ada".to_string())]);
        assert!(matches!(
            db.update(ObjectType::Contacts, "c-1", p(), now, false),
            Err(CrmError::NotFound { .. })
        ));
        assert!(db.update(ObjectType::Tasks, "1", p(), now, true).is_err());
        let c = db
            .update(ObjectType::Contacts, "c-1", p(), now, true)
            .unwrap();
        assert_eq!(c.id, "c-1");
        assert_eq!(
            db.get(ObjectType::Contacts, "c-1").unwrap().properties["firstname"],
            "Ada"
        );
        assert_eq!(db.stats().writes["contacts"].updated, 1);
    }
}
