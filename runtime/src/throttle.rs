//! Failed logins counted three ways, so that password guessing slows to a trickle without
//! locking colleagues out (several people behind one NAT or one reception workstation share
//! an address):
//! - per (client address, user name): past `Limits::per_address_and_name` failures within
//!   the window, that name's logins from that address are answered 429 with `Retry-After`;
//!   below the account lockout's 7, so one address cannot lock an account;
//! - per address, more generously (`per_address`): password spraying across many names from
//!   one machine is stopped, while a colleague's correct login after a few typos of others
//!   goes through;
//! - per user name across addresses (`per_name`): guessing one name from many machines.
//!
//! The account lockout (`auth::login`) still applies. The limits are settings
//! (`emr.loginThrottle.*`, docs/api.md). The client address is the connection's peer, unless
//! the peer is a trusted proxy (`EMR_TRUSTED_PROXIES`: the gateway), whose `X-Real-IP` then
//! names the client. Nobody else can choose the address they are counted under.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How many failed logins each count allows within `window`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    pub per_address_and_name: usize,
    pub per_address: usize,
    pub per_name: usize,
    pub window: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            per_address_and_name: 5,
            per_address: 30,
            per_name: 20,
            window: Duration::from_secs(300),
        }
    }
}

/// Keys tracked at most in each count; past it the oldest half is forgotten.
const TRACKED: usize = 100_000;

/// The times of recent failures, per key.
struct Failures<K>(HashMap<K, VecDeque<Instant>>);

impl<K: Hash + Eq + Clone> Failures<K> {
    /// How long `key` must wait, if it has reached `limit` failures within `window`.
    fn wait(&mut self, key: &K, limit: usize, window: Duration, now: Instant) -> Option<Duration> {
        let list = self.0.get_mut(key)?;
        while list
            .front()
            .is_some_and(|t| now.duration_since(*t) >= window)
        {
            list.pop_front();
        }
        if list.len() < limit.max(1) {
            if list.is_empty() {
                self.0.remove(key);
            }
            return None;
        }
        // The failure whose leaving the window brings the count below the limit.
        let deciding = list[list.len() - limit.max(1)];
        Some(window.saturating_sub(now.duration_since(deciding)))
    }

    fn failed(&mut self, key: K, limit: usize, now: Instant) {
        if self.0.len() >= TRACKED && !self.0.contains_key(&key) {
            let mut by_age: Vec<(K, Instant)> = self
                .0
                .iter()
                .filter_map(|(k, v)| v.back().map(|t| (k.clone(), *t)))
                .collect();
            by_age.sort_by_key(|(_, t)| *t);
            for (k, _) in by_age.into_iter().take(TRACKED / 2) {
                self.0.remove(&k);
            }
        }
        let list = self.0.entry(key).or_default();
        list.push_back(now);
        while list.len() > limit.max(1) {
            list.pop_front();
        }
    }
}

impl<K> Default for Failures<K> {
    fn default() -> Self {
        Failures(HashMap::new())
    }
}

#[derive(Default)]
struct Counts {
    by_pair: Failures<(IpAddr, String)>,
    by_address: Failures<IpAddr>,
    by_name: Failures<String>,
}

#[derive(Default)]
pub struct LoginThrottle {
    counts: Mutex<Counts>,
}

/// The topic of the notices that tell other runtimes sharing a store of a failed login.
pub const FAILED_LOGINS: &str = "failed_logins";

/// A failed login as a notice names it: `address|name`.
pub fn notice_key(ip: IpAddr, name: &str) -> String {
    format!("{ip}|{}", name_key(name))
}

/// The address and name of a notice's key.
pub fn from_notice_key(key: &str) -> Option<(IpAddr, &str)> {
    let (ip, name) = key.split_once('|')?;
    Some((ip.parse().ok()?, name))
}

/// User names are counted in lower case, as logins find them.
fn name_key(name: &str) -> String {
    name.trim().to_lowercase()
}

impl LoginThrottle {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        match self.counts.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// How long a login as `name` from `ip` must wait before trying again, if it must: the
    /// longest wait of the counts it has exhausted.
    pub fn wait(&self, ip: IpAddr, name: &str, limits: &Limits) -> Option<Duration> {
        self.wait_at(ip, name, limits, Instant::now())
    }

    fn wait_at(&self, ip: IpAddr, name: &str, limits: &Limits, now: Instant) -> Option<Duration> {
        let name = name_key(name);
        let mut c = self.lock();
        let w = limits.window;
        [
            c.by_pair
                .wait(&(ip, name.clone()), limits.per_address_and_name, w, now),
            c.by_address.wait(&ip, limits.per_address, w, now),
            c.by_name.wait(&name, limits.per_name, w, now),
        ]
        .into_iter()
        .flatten()
        .max()
    }

    pub fn failed(&self, ip: IpAddr, name: &str, limits: &Limits) {
        self.failed_at(ip, name, limits, Instant::now())
    }

    fn failed_at(&self, ip: IpAddr, name: &str, limits: &Limits, now: Instant) {
        let name = name_key(name);
        let mut c = self.lock();
        c.by_pair
            .failed((ip, name.clone()), limits.per_address_and_name, now);
        c.by_address.failed(ip, limits.per_address, now);
        c.by_name.failed(name, limits.per_name, now);
    }

    /// A correct login clears its own (address, name) count; the address's and the name's
    /// counts age out, so one valid account cannot launder a spray of guesses.
    pub fn succeeded(&self, ip: IpAddr, name: &str) {
        let name = name_key(name);
        self.lock().by_pair.0.remove(&(ip, name));
    }
}

/// Password verifications (argon2, deliberately slow) run on at most as many threads as
/// the machine has cores. When all are busy, a login waits its turn in a queue that holds
/// at most one waiting login per client address and `QUEUE_PER_CORE` per core in all; a
/// login from an address that already waits, or beyond that bound, is answered 503 at once.
/// So machines flooding wrong passwords hold one place each (and the per-address throttle
/// soon stops them), and a real login waits behind at most that queue: well under a second.
pub struct PasswordGate {
    permits: tokio::sync::Semaphore,
    /// Addresses whose login waits for a turn.
    waiting: Mutex<std::collections::HashSet<IpAddr>>,
    max_waiting: usize,
    /// One lock per credentials being verified (a digest of user name and password), so
    /// that requests presenting the same ones wait for one verification instead of
    /// queueing their own.
    in_flight: Mutex<HashMap<[u8; 32], std::sync::Arc<tokio::sync::Mutex<()>>>>,
}

pub const QUEUE_PER_CORE: usize = 16;

/// The gate is full: the caller should answer 503 with `Retry-After`.
#[derive(Debug)]
pub struct Busy;

/// A place in the queue, given back when the login gets its turn or gives up.
struct Waiting<'g> {
    gate: &'g PasswordGate,
    ip: IpAddr,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.gate.lock_waiting().remove(&self.ip);
    }
}

impl PasswordGate {
    pub fn new() -> PasswordGate {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        PasswordGate {
            permits: tokio::sync::Semaphore::new(cores),
            waiting: Mutex::new(std::collections::HashSet::new()),
            max_waiting: cores * QUEUE_PER_CORE,
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<IpAddr>> {
        match self.waiting.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Waits for a turn to verify a password for a login from `ip`, unless that address
    /// already waits or the queue is full.
    pub async fn enter(&self, ip: IpAddr) -> Result<tokio::sync::SemaphorePermit<'_>, Busy> {
        if let Ok(p) = self.permits.try_acquire() {
            return Ok(p);
        }
        let place = {
            let mut waiting = self.lock_waiting();
            if waiting.len() >= self.max_waiting || !waiting.insert(ip) {
                return Err(Busy);
            }
            Waiting { gate: self, ip }
        };
        let permit = self.permits.acquire().await.map_err(|_| Busy);
        drop(place);
        permit
    }

    /// The lock shared by every request presenting these credentials right now.
    pub fn same_credentials(
        &self,
        name: &str,
        password: &str,
    ) -> std::sync::Arc<tokio::sync::Mutex<()>> {
        use sha2::Digest;
        let mut digest = sha2::Sha256::new();
        digest.update(name.to_lowercase().as_bytes());
        digest.update([0]);
        digest.update(password.as_bytes());
        let key: [u8; 32] = digest.finalize().into();
        let mut map = match self.in_flight.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        // Forget locks no request holds any more.
        map.retain(|_, lock| std::sync::Arc::strong_count(lock) > 1);
        map.entry(key).or_default().clone()
    }
}

impl Default for PasswordGate {
    fn default() -> Self {
        PasswordGate::new()
    }
}

/// A set of addresses and networks (`10.0.0.0/8`, `::1`).
#[derive(Debug, Clone, Default)]
pub struct Networks(Vec<(IpAddr, u8)>);

impl Networks {
    pub fn parse(s: &str) -> Result<Networks, String> {
        let mut out = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (addr, bits) = match item.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (item, None),
            };
            let ip: IpAddr = addr
                .parse()
                .map_err(|_| format!("EMR_TRUSTED_PROXIES: '{item}' is not an address"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                None => max,
                Some(b) => b
                    .parse::<u8>()
                    .ok()
                    .filter(|b| *b <= max)
                    .ok_or_else(|| format!("EMR_TRUSTED_PROXIES: '{item}' has a bad prefix"))?,
            };
            out.push((ip, bits));
        }
        Ok(Networks(out))
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        self.0.iter().any(|(net, bits)| match (net, ip) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(*bits)).unwrap_or(0);
                u32::from(*n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(*bits)).unwrap_or(0);
                u128::from(*n) & mask == u128::from(a) & mask
            }
            _ => false,
        })
    }
}

/// The client's address: the peer's, or, from a trusted proxy, its `X-Real-IP`. Without a
/// peer (requests made inside the process, in tests) the header is taken as given.
pub fn client_address(peer: Option<IpAddr>, real_ip: Option<&str>, trusted: &Networks) -> IpAddr {
    let forwarded = || real_ip.and_then(|v| v.trim().parse::<IpAddr>().ok());
    match peer {
        Some(p) if trusted.contains(p) => forwarded().unwrap_or(p),
        Some(p) => p,
        None => forwarded().unwrap_or(IpAddr::from([0, 0, 0, 0])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 9, 0, n])
    }

    #[test]
    fn a_name_guessed_from_one_address_waits_while_colleagues_log_in() {
        let t = LoginThrottle::default();
        let limits = Limits::default();
        let now = Instant::now();
        for n in 0..5 {
            assert_eq!(t.wait_at(ip(1), &format!("typo{n}"), &limits, now), None);
            t.failed_at(ip(1), &format!("typo{n}"), &limits, now);
        }
        // Five failures for other names: a colleague's login from the same address passes.
        assert_eq!(t.wait_at(ip(1), "nurse", &limits, now), None);
        for _ in 0..5 {
            t.failed_at(ip(1), "Nurse", &limits, now);
        }
        // A sixth guess at the same name (any case) waits for the window…
        let wait = t.wait_at(ip(1), "NURSE", &limits, now).unwrap();
        assert_eq!(wait, limits.window);
        // …from that address only, and no longer once the window has passed.
        assert_eq!(t.wait_at(ip(2), "nurse", &limits, now), None);
        assert_eq!(
            t.wait_at(ip(1), "nurse", &limits, now + limits.window),
            None
        );
    }

    #[test]
    fn spraying_names_from_one_address_and_one_name_from_many_are_stopped() {
        let t = LoginThrottle::default();
        let limits = Limits::default();
        let now = Instant::now();
        let mut stopped_at = None;
        for n in 0..50 {
            if t.wait_at(ip(3), &format!("user{n}"), &limits, now)
                .is_some()
            {
                stopped_at = Some(n);
                break;
            }
            t.failed_at(ip(3), &format!("user{n}"), &limits, now);
        }
        assert_eq!(stopped_at, Some(limits.per_address));
        let mut stopped_at = None;
        for n in 0..50u8 {
            if t.wait_at(ip(100 + n), "admin", &limits, now).is_some() {
                stopped_at = Some(n as usize);
                break;
            }
            t.failed_at(ip(100 + n), "admin", &limits, now);
        }
        assert_eq!(stopped_at, Some(limits.per_name));
    }

    #[test]
    fn a_success_clears_its_own_count_only() {
        let t = LoginThrottle::default();
        let limits = Limits {
            per_address: 6,
            ..Limits::default()
        };
        let now = Instant::now();
        for _ in 0..4 {
            t.failed_at(ip(4), "clerk", &limits, now);
        }
        t.succeeded(ip(4), "clerk");
        for _ in 0..2 {
            t.failed_at(ip(4), "clerk", &limits, now);
        }
        // The pair starts again at two; the address's count kept its six failures.
        assert!(t.wait_at(ip(4), "other", &limits, now).is_some());
        assert!(t.lock().by_pair.0[&(ip(4), "clerk".to_string())].len() == 2);
    }

    #[tokio::test]
    async fn the_password_gate_holds_one_place_per_address_and_bounds_its_queue() {
        let gate = PasswordGate::new();
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let ip = |n: usize| IpAddr::from([10, 0, (n >> 8) as u8, n as u8]);
        // Every permit taken…
        let mut held = Vec::new();
        for n in 0..cores {
            held.push(gate.enter(ip(n)).await.unwrap());
        }
        // …one place per address: a second login from a waiting address is turned away…
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut first = Box::pin(gate.enter(ip(1000)));
        assert!(first.as_mut().poll(&mut cx).is_pending());
        assert!(gate.enter(ip(1000)).await.is_err());
        // …and past the bound, anyone is.
        let mut waiters = vec![first];
        for n in 1..cores * QUEUE_PER_CORE {
            let mut w = Box::pin(gate.enter(ip(2000 + n)));
            assert!(w.as_mut().poll(&mut cx).is_pending());
            waiters.push(w);
        }
        assert!(gate.enter(ip(9999)).await.is_err());
        drop(held);
        for w in waiters {
            let _turn = w.await.unwrap();
        }
        // Every place was given back.
        assert!(gate.lock_waiting().is_empty());
    }

    #[test]
    fn a_failed_login_crosses_to_other_runtimes_as_address_and_name() {
        let key = notice_key(ip(7), " Admin|x ");
        assert_eq!(from_notice_key(&key), Some((ip(7), "admin|x")));
        assert_eq!(from_notice_key("not an address|admin"), None);
    }

    #[test]
    fn networks_match_by_prefix() {
        let n = Networks::parse("127.0.0.0/8, ::1, 172.16.0.0/12").unwrap();
        assert!(n.contains("127.1.2.3".parse().unwrap()));
        assert!(n.contains("::1".parse().unwrap()));
        assert!(n.contains("172.20.0.5".parse().unwrap()));
        assert!(n.contains("::ffff:172.20.0.5".parse().unwrap()));
        assert!(!n.contains("172.32.0.1".parse().unwrap()));
        assert!(!n.contains("10.0.0.1".parse().unwrap()));
        assert!(Networks::parse("nonsense").is_err());
        assert!(Networks::parse("10.0.0.0/33").is_err());
        assert!(
            Networks::parse("0.0.0.0/0")
                .unwrap()
                .contains("8.8.8.8".parse().unwrap())
        );
    }

    #[test]
    fn only_a_trusted_peer_names_the_client() {
        let trusted = Networks::parse("10.0.0.2").unwrap();
        let gateway = Some("10.0.0.2".parse().unwrap());
        let stranger = Some("10.0.0.9".parse().unwrap());
        assert_eq!(
            client_address(gateway, Some("192.168.1.20"), &trusted),
            "192.168.1.20".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_address(stranger, Some("192.168.1.20"), &trusted),
            "10.0.0.9".parse::<IpAddr>().unwrap()
        );
    }
}
