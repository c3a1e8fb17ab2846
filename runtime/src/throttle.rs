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
