//! The state key of per-contact state: tenant and contact together.
//!
//! Contact ids come from each tenant's CRM and collide across tenants (CRM
//! ids are small numbers per portal), so every store, timer and effect key
//! that names a contact names its tenant too. The tenant is length-prefixed,
//! so no two (tenant, contact) pairs share a key.
//!
//! Keys written before a processor kept the tenant hold the contact id
//! alone; [`contact_of`] reads both, so state restored from an older
//! version still finishes what it started.

use std::borrow::Cow;

/// The key of `contact` of `tenant`: the tenant's length (u32, big-endian),
/// the tenant, then the contact.
pub fn contact_key(tenant: &str, contact: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(4 + tenant.len() + contact.len());
    key.extend_from_slice(
        &u32::try_from(tenant.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    key.extend_from_slice(tenant.as_bytes());
    key.extend_from_slice(contact.as_bytes());
    key
}

/// The tenant and contact of a key [`contact_key`] made, or `None` for any
/// other bytes (a key from before the tenant was kept).
pub fn split_contact_key(key: &[u8]) -> Option<(&str, &str)> {
    let (len, rest) = key.split_first_chunk::<4>()?;
    // Ids never hold NUL, so a key of an id alone never starts with one;
    // a tenant longer than 16 MiB is not a tenant.
    if len[0] != 0 {
        return None;
    }
    let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
    let tenant = std::str::from_utf8(rest.get(..len)?).ok()?;
    let contact = std::str::from_utf8(rest.get(len..)?).ok()?;
    Some((tenant, contact))
}

/// The contact a key names: its contact part, or the whole key for a key of
/// the contact id alone (written before the tenant was kept).
pub fn contact_of(key: &[u8]) -> Cow<'_, str> {
    match split_contact_key(key) {
        Some((_, contact)) => Cow::Borrowed(contact),
        None => String::from_utf8_lossy(key),
    }
}

/// The key of the person a phone number reaches, within `tenant`: the Kafka key of
/// `launch-commands` and the launch dispatcher's per-number store key, so every launch to
/// one number of one tenant meets on one partition, where frequency caps count the calls
/// placed to it across contacts and campaigns. A NANP number in any format keys as its
/// E.164 digits (`+1 (305) 555-0101` and `3055550101` are one person); any other keys
/// as its digits. The tenant comes first and the digits last, after the final `/`, so
/// no two pairs share a key whatever the tenant id holds.
pub fn phone_key(tenant: &str, number: &str) -> String {
    let digits: String = match callstream_domain::area_codes::parse_nanp(number) {
        Ok(nanp) => nanp.e164().chars().filter(char::is_ascii_digit).collect(),
        Err(_) => number.chars().filter(char::is_ascii_digit).collect(),
    };
    format!("{tenant}/{digits}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_in_any_format_is_one_key_per_tenant() {
        let key = phone_key("acme", "+13055550101");
        for same in [
            "(305) 555-0101",
            "305.555.0101",
            "1 305 555 0101",
            "tel:+1-305-555-0101",
        ] {
            assert_eq!(phone_key("acme", same), key, "{same}");
        }
        assert_eq!(key, "acme/13055550101");
        assert_ne!(phone_key("globex", "+13055550101"), key);
        assert_ne!(
            phone_key("acme/1", "3055550101"),
            phone_key("acme", "13055550101")
        );
        assert_eq!(phone_key("acme", "+44 20 7946 0958"), "acme/442079460958");
    }

    #[test]
    fn keys_keep_tenants_apart_and_split_back() {
        let a = contact_key("acme", "42");
        assert_ne!(a, contact_key("globex", "42"));
        assert_ne!(contact_key("ab", "c"), contact_key("a", "bc"));
        assert_eq!(split_contact_key(&a), Some(("acme", "42")));
        assert_eq!(contact_of(&a), "42");
        assert_eq!(split_contact_key(&contact_key("", "")), Some(("", "")));
    }

    #[test]
    fn a_key_of_the_contact_alone_reads_as_the_contact() {
        for legacy in ["42", "c-1", "contact with spaces", ""] {
            assert_eq!(split_contact_key(legacy.as_bytes()), None, "{legacy}");
            assert_eq!(contact_of(legacy.as_bytes()), legacy);
        }
    }

    #[test]
    fn the_contact_processors_key_is_this_key() {
        // Pinned: the contact processor's store already holds keys of this shape.
        assert_eq!(contact_key("t", "c"), b"\0\0\0\x01tc".to_vec());
    }
}
