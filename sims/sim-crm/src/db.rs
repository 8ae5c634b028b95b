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
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    objects: HashMap<ObjectType, HashMap<String, CrmObject>>,
    writes: BTreeMap<&'static str, TypeWrites>,
    op_writes: HashMap<String, u64>,
    op_creates: HashMap<(ObjectType, String), u64>,
}

impl Inner {
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

    /// Creates an object; always a new one (no idempotency key).
    pub fn create(
        &self,
        kind: ObjectType,
        properties: BTreeMap<String, String>,
        associations: Vec<Association>,
        now: DateTime<Utc>,
        searchable_at: Instant,
    ) -> CrmObject {
        let mut g = self.lock();
        g.next_id += 1;
        let seq = g.next_id;
        // HubSpot's ids are large numbers; these look alike.
        let id = (100_000_000 + seq).to_string();
        let mut o = CrmObject::new(kind, id.clone(), seq, now, searchable_at);
        o.apply(properties, now);
        o.associations = associations;
        g.writes.entry(kind.as_str()).or_default().created += 1;
        g.count_op(kind, o.op_id(), true);
        g.objects.entry(kind).or_default().insert(id, o.clone());
        o
    }

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
        let op = properties.get(crate::objects::OP_ID_PROPERTY).cloned();
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
        let updated = {
            let objects = g.objects.entry(kind).or_default();
            let Some(o) = objects.get_mut(id) else {
                return Err(CrmError::NotFound { id: id.into() });
            };
            o.apply(properties, now);
            o.clone()
        };
        g.writes.entry(kind.as_str()).or_default().updated += 1;
        g.count_op(kind, op.as_deref(), false);
        Ok(updated)
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
        WriteStats {
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
            db.create(ObjectType::Tasks, props(op), vec![], now, at);
        }
        db.create(ObjectType::Notes, props("b"), vec![], now, at);
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
