//! Failed logins counted per client address, so that password guessing from one machine
//! slows to a trickle and cannot lock other people's accounts: past `LIMIT` failures within
//! `WINDOW`, that address's logins are answered 429 with `Retry-After` until its oldest
//! failure leaves the window. The account lockout (`auth::login`) still applies, but a
//! single address reaches this limit first.
//!
//! The client address is the connection's peer, unless the peer is a trusted proxy
//! (`EMR_TRUSTED_PROXIES`: the gateway), whose `X-Real-IP` then names the client. Nobody
//! else can choose the address they are counted under.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed logins allowed per address within `WINDOW` (below the account lockout's 7, so
/// one address cannot lock an account).
pub const LIMIT: usize = 5;
pub const WINDOW: Duration = Duration::from_secs(300);
/// Addresses tracked at most; past it the oldest half is forgotten.
const TRACKED: usize = 100_000;

#[derive(Default)]
pub struct LoginThrottle {
    failures: Mutex<HashMap<IpAddr, VecDeque<Instant>>>,
}

impl LoginThrottle {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, VecDeque<Instant>>> {
        match self.failures.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// How long this address must wait before trying again, if it must.
    pub fn wait(&self, ip: IpAddr) -> Option<Duration> {
        let now = Instant::now();
        let mut map = self.lock();
        let list = map.get_mut(&ip)?;
        while list
            .front()
            .is_some_and(|t| now.duration_since(*t) >= WINDOW)
        {
            list.pop_front();
        }
        if list.len() < LIMIT {
            if list.is_empty() {
                map.remove(&ip);
            }
            return None;
        }
        let oldest = *list.front()?;
        Some(WINDOW.saturating_sub(now.duration_since(oldest)))
    }

    pub fn failed(&self, ip: IpAddr) {
        let mut map = self.lock();
        if map.len() >= TRACKED && !map.contains_key(&ip) {
            let mut by_age: Vec<(IpAddr, Instant)> = map
                .iter()
                .filter_map(|(k, v)| v.back().map(|t| (*k, *t)))
                .collect();
            by_age.sort_by_key(|(_, t)| *t);
            for (k, _) in by_age.into_iter().take(TRACKED / 2) {
                map.remove(&k);
            }
        }
        let list = map.entry(ip).or_default();
        list.push_back(Instant::now());
        while list.len() > LIMIT {
            list.pop_front();
        }
    }

    pub fn succeeded(&self, ip: IpAddr) {
        self.lock().remove(&ip);
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

    #[test]
    fn an_address_waits_after_the_limit_and_is_forgiven_on_success() {
        let t = LoginThrottle::default();
        let ip: IpAddr = "192.168.1.20".parse().unwrap();
        let other: IpAddr = "192.168.1.21".parse().unwrap();
        for _ in 0..LIMIT - 1 {
            t.failed(ip);
            assert_eq!(t.wait(ip), None);
        }
        t.failed(ip);
        let wait = t.wait(ip).expect("throttled at the limit");
        assert!(wait <= WINDOW && wait > WINDOW - Duration::from_secs(5));
        assert_eq!(t.wait(other), None, "another address is not affected");
        t.succeeded(ip);
        assert_eq!(t.wait(ip), None);
    }
}
