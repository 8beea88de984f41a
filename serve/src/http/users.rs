//! `basic_auth_users` of `--web.config.file`: the users and their bcrypt hashes, and the
//! passwords verified so far.
//!
//! A hash is checked for its form and cost when the file is read, and computed only when a
//! request brings a password (as exporter-toolkit's `validateUsers` takes each hash's cost
//! and no more): reading the file never runs bcrypt, so a slow hash slows only the requests
//! of its own user. A password that checked is remembered with the hash it was checked
//! against, as the toolkit keys its cache by user, hash and password: a check that was
//! running while the file changed can never vouch for the password under a new hash.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;

/// The highest bcrypt cost taken: that of Apache's htpasswd, the tool the toolkit's
/// documentation makes hashes with (`-C`: "valid: 4 to 17"; apr-util enforces 17 since
/// 1.6.0). Each step doubles a check's time: glibc's crypt takes 0.9 s of CPU at 14 and
/// 6.4 s at 17 on this project's 2-core machine, near Prometheus' default scrape timeout
/// of 10 s, and 31 would take some days. The toolkit takes up to bcrypt's own 31, which no
/// scrape could wait for.
pub const MAX_COST: u32 = 17;

/// bcrypt's lowest cost (the toolkit refuses a lower one too).
const MIN_COST: u32 = 4;

/// A bcrypt hash of no user's password, checked when the user named is not configured so
/// that a wrong name costs as long as a wrong password (made by glibc's crypt(3)).
const DUMMY_HASH: &str = "$2y$10$Kq3vT9xW2mL8pR4sN6bYcO/NQj/Wy9DKet9a6TAd2D8a5WII1gm9C";

/// The hash of examples/prometheus/web-config.yml, of the password it publishes
/// (`replace-me`): refused, so that no server runs with a password everyone can read.
const EXAMPLE_HASH: &str = "$2b$10$8eWQHRRwS2FF3Ck5q.i2AuXbgt1oSDz.eTqmCzqBL91Oryrb4XCkK";

/// The users of one reading of the file and their bcrypt hashes; none: no authentication.
#[derive(Default)]
pub struct Users(HashMap<String, String>);

impl Users {
    /// Whether no user is configured (no authentication).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `user` with `hash`, once its form and cost are checked (bcrypt is not run).
    ///
    /// # Errors
    /// `hash` is no bcrypt hash, or its cost is past [`MAX_COST`], said with what would be
    /// right (the error starts with the key, `basic_auth_users.USER`).
    pub fn add(&mut self, user: String, hash: String) -> Result<(), String> {
        check_hash(&hash).map_err(|e| format!("basic_auth_users.{user} {e}"))?;
        self.0.insert(user, hash);
        Ok(())
    }
}

/// Checks that `hash` is a bcrypt hash this server verifies, without computing it:
/// `$2a$`, `$2b$` or `$2y$`, a two-digit cost from 4 to [`MAX_COST`], and 53 characters of
/// salt and hash in bcrypt's base64.
fn check_hash(hash: &str) -> Result<(), String> {
    let example = "e.g. what `htpasswd -nBC 10 \"\" | tr -d ':\\n'` prints";
    let bytes = hash.as_bytes();
    let formed = ["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p))
        && bytes
            .get(4..6)
            .is_some_and(|c| c.iter().all(u8::is_ascii_digit))
        && hash.parse::<bcrypt::HashParts>().is_ok();
    if !formed {
        return Err(format!(
            "is not a bcrypt hash: $2a$, $2b$ or $2y$, a two-digit cost and 53 characters \
             of salt and hash ({example})"
        ));
    }
    if hash == EXAMPLE_HASH {
        return Err(format!(
            "is the example's hash (examples/prometheus/web-config.yml), of a password \
             published there: give your own password's ({example})"
        ));
    }
    let cost: u32 = hash[4..6].parse().unwrap_or(0);
    if !(MIN_COST..=MAX_COST).contains(&cost) {
        return Err(format!(
            "has bcrypt cost {cost}: this server takes {MIN_COST} to {MAX_COST} (htpasswd's \
             range; each step doubles the time a request's check takes) ({example})"
        ));
    }
    Ok(())
}

/// The passwords verified so far: each user's last good password, with the hash it was
/// verified against (bcrypt is slow by design). One entry a user, forgotten when the file is
/// read again, so it holds no more than the users configured.
#[derive(Default)]
pub struct Verified(Mutex<HashMap<String, (String, String)>>);

impl Verified {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, String)>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Forgets every password verified.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// Whether `authorization` (a request's `Authorization` header) names one of `users`
    /// with the password of its hash. bcrypt runs outside every lock.
    pub fn admits(&self, users: &Users, authorization: Option<&[u8]>) -> bool {
        self.admits_with(users, authorization, || ())
    }

    /// [`admits`](Verified::admits), running `between` after the bcrypt check and before
    /// its result is remembered (where the file may change; the tests' seam).
    pub(super) fn admits_with(
        &self,
        users: &Users,
        authorization: Option<&[u8]>,
        between: impl FnOnce(),
    ) -> bool {
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            return false;
        };
        let hash = users.0.get(&user);
        if let Some(hash) = hash
            && self
                .lock()
                .get(&user)
                .is_some_and(|(h, p)| h == hash && *p == password)
        {
            return true;
        }
        let good =
            bcrypt::verify(&password, hash.map_or(DUMMY_HASH, String::as_str)).unwrap_or(false);
        between();
        match hash {
            Some(hash) if good => {
                self.lock().insert(user, (hash.clone(), password));
                true
            }
            _ => false,
        }
    }
}

/// The user and password of a `Basic` authorization header.
fn basic_credentials(header: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(header).ok()?.trim();
    let (scheme, encoded) = text.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_credentials_are_decoded() {
        // "alice:s3cret:with colon" in base64 (RFC 7617: the password may hold colons).
        let header = b"Basic YWxpY2U6czNjcmV0OndpdGggY29sb24=";
        assert_eq!(
            basic_credentials(header),
            Some(("alice".to_string(), "s3cret:with colon".to_string()))
        );
        assert_eq!(basic_credentials(b"Bearer abc"), None);
        assert_eq!(basic_credentials(b"Basic !!!"), None);
    }
}
