//! Which addresses WebFetch refuses to connect to: every range that is not
//! the public internet (loopback, private, link-local, carrier-grade NAT,
//! multicast, unspecified, reserved and documentation ranges, and the cloud
//! metadata addresses among them), IPv4 written inside IPv6 included
//! (IPv4-mapped, NAT64 and 6to4; the deprecated IPv4-compatible form is
//! refused whole), unless the user's
//! `[web] allow_addresses` names the address ([`Addresses`]).
//!
//! Pure: the caller resolves names; this only judges the addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The addresses the user's config lets WebFetch reach though they are not
/// public (`[web] allow_addresses`: addresses or CIDR ranges).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Addresses {
    allowed: Vec<IpNet>,
}

impl Addresses {
    /// Reads `allow_addresses`; `Err` names an entry that is neither an
    /// address nor a range.
    pub fn new<S: AsRef<str>>(allowed: &[S]) -> Result<Addresses, String> {
        let mut nets = Vec::new();
        for a in allowed {
            let a = a.as_ref().trim();
            let a = a.trim_start_matches('[').trim_end_matches(']');
            let net = match a.parse::<IpNet>() {
                Ok(net) => net,
                Err(_) => match a.parse::<IpAddr>() {
                    Ok(ip) => IpNet::from(ip),
                    Err(_) => {
                        return Err(format!(
                            "`[web] allow_addresses` has {a:?}, which is neither an IP address nor a CIDR range"
                        ));
                    }
                },
            };
            nets.push(net);
        }
        Ok(Addresses { allowed: nets })
    }

    /// Why WebFetch may not connect to `ip` (the range it is in), or `None`
    /// when it may: a public address, or one the user allowed.
    pub fn refusal(&self, ip: IpAddr) -> Option<&'static str> {
        let why = refused_range(ip)?;
        let plain = canonical(ip);
        if self
            .allowed
            .iter()
            .any(|net| net.contains(&ip) || net.contains(&plain))
        {
            return None;
        }
        Some(why)
    }
}

/// A host as the rules, grants and config keys compare it: trimmed,
/// lower-cased, without IPv6 brackets or a final dot, and an address in
/// one spelling, whichever it was written in (`0xa.0.0.5`, `167772165`,
/// `[::ffff:a00:5]` and `10.0.0.5` are all `10.0.0.5`; `0:0::1` is `::1`):
/// a rule that names an address names every spelling of it.
pub fn host_key(host: &str) -> String {
    let bare = host
        .trim()
        .trim_end_matches('.')
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    let ip = bare
        .parse::<IpAddr>()
        .ok()
        .or_else(|| match url::Host::parse(&bare) {
            Ok(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
            _ => None,
        });
    ip.map_or(bare, |ip| canonical(ip).to_string())
}

/// The address itself when it is IPv4 written as IPv6 (mapped, NAT64,
/// 6to4), else `ip`.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// The IPv4 address an IPv6 address carries and routes to: `::ffff:a.b.c.d`
/// (mapped), `64:ff9b::a.b.c.d` (NAT64) and `2002:aabb:ccdd::/48` (6to4).
/// (`::a.b.c.d`, the deprecated compatible form, is in `::/8`, refused
/// whole.)
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let tail = || Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail());
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// The non-public range `ip` is in, named for a person.
pub fn refused_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_range(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => v4_range(v4).map(|_| "an IPv4 address written as IPv6 that is not public"),
            None => v6_range(v6),
        },
    }
}

fn v4_range(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, d] = ip.octets();
    Some(match (a, b, c, d) {
        (169, 254, 169, 254) | (169, 254, 170, 2) | (100, 100, 100, 200) => {
            "a cloud metadata address"
        }
        (0, ..) => "the unspecified range (0.0.0.0/8)",
        (127, ..) => "loopback (127.0.0.0/8)",
        (10, ..) => "a private range (10.0.0.0/8)",
        (172, 16..=31, ..) => "a private range (172.16.0.0/12)",
        (192, 168, ..) => "a private range (192.168.0.0/16)",
        (100, 64..=127, ..) => "carrier-grade NAT (100.64.0.0/10)",
        (169, 254, ..) => "link-local (169.254.0.0/16)",
        (192, 0, 0, _) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => "a documentation range",
        (198, 18..=19, ..) => "the benchmarking range (198.18.0.0/15)",
        (224..=239, ..) => "multicast (224.0.0.0/4)",
        (240..=255, ..) => "reserved (240.0.0.0/4) or broadcast",
        _ => return None,
    })
}

fn v6_range(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("the unspecified address (::)");
    }
    if ip.is_loopback() {
        return Some("loopback (::1)");
    }
    if s[0..4] == [0xfd00, 0x0ec2, 0, 0] && s[4..8] == [0, 0, 0, 0x254] {
        return Some("a cloud metadata address");
    }
    Some(match s[0] {
        x if x & 0xfe00 == 0xfc00 => "a unique local range (fc00::/7)",
        x if x & 0xffc0 == 0xfe80 => "link-local (fe80::/10)",
        x if x & 0xffc0 == 0xfec0 => "site-local (fec0::/10)",
        x if x & 0xff00 == 0xff00 => "multicast (ff00::/8)",
        0x2001 if s[1] == 0x0db8 => "the documentation range (2001:db8::/32)",
        0x2001 if s[1] < 0x0200 => "IETF protocol assignments (2001::/23)",
        0x3fff if s[1] < 0x1000 => "the documentation range (3fff::/20)",
        0x5f00 => "segment routing (5f00::/16)",
        // Translated to IPv4 as the local network chose: where, candor
        // cannot tell.
        0x0064 if s[1..3] == [0xff9b, 1] => "local-use NAT64 (64:ff9b:1::/48)",
        0x0100 if s[1..3] == [0, 0] && s[3] <= 1 => {
            "the discard range (100::/64) or the dummy prefix (100:0:0:1::/64)"
        }
        0 => "a reserved range (::/8)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> Option<&'static str> {
        Addresses::default().refusal(text.parse().unwrap())
    }

    #[test]
    fn every_range_that_is_not_the_internet_is_refused() {
        for ip in [
            "127.0.0.1",
            "127.9.9.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.254",
            "169.254.1.1",
            "0.0.0.0",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::",
            "::1",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            assert!(refused(ip).is_some(), "{ip} should be refused");
        }
    }

    #[test]
    fn the_special_ipv6_ranges_that_are_not_reachable_are_refused_too() {
        // IANA's special-purpose registry, "globally reachable: false".
        for ip in [
            "64:ff9b:1::a00:1",
            "64:ff9b:1:ffff::1",
            "100:0:0:1::1",
            "2001::1",
            "2001:2::1",
            "2001:10::1",
            "2001:1ff:ffff::1",
            "3fff::1",
            "3fff:fff::1",
            "5f00::1",
        ] {
            assert!(refused(ip).is_some(), "{ip} should be refused");
        }
        // Their neighbours are the internet.
        for ip in ["64:ff9b:2::1", "2001:200::1", "3fff:1000::1", "5f01::1"] {
            assert_eq!(refused(ip), None, "{ip}");
        }
    }

    #[test]
    fn cloud_metadata_addresses_are_named_and_refused_in_every_spelling() {
        for ip in [
            "169.254.169.254",
            "169.254.170.2",
            "100.100.100.200",
            "fd00:ec2::254",
        ] {
            assert_eq!(refused(ip), Some("a cloud metadata address"), "{ip}");
        }
        for ip in [
            "::ffff:169.254.169.254",
            "::ffff:a9fe:a9fe",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:a9fe:a9fe::1",
            "2002:7f00:1::",
        ] {
            assert!(refused(ip).is_some(), "{ip} should be refused");
        }
    }

    #[test]
    fn a_host_has_one_key_whatever_its_spelling() {
        for (written, key) in [
            ("10.0.0.5", "10.0.0.5"),
            ("0xa.0.0.5", "10.0.0.5"),
            ("167772165", "10.0.0.5"),
            ("012.0.0.5.", "10.0.0.5"),
            ("[::ffff:a00:5]", "10.0.0.5"),
            ("::FFFF:10.0.0.5", "10.0.0.5"),
            ("[0:0:0:0:0:0:0:1]", "::1"),
            ("Docs.RS.", "docs.rs"),
            ("*.Example.com", "*.example.com"),
            ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ] {
            assert_eq!(host_key(written), key, "{written}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(refused(ip), None, "{ip}");
        }
    }

    #[test]
    fn the_user_may_allow_an_address_or_a_range_in_either_spelling() {
        let a = Addresses::new(&["127.0.0.1", "10.0.0.0/8", "[::1]"]).unwrap();
        let ok = |ip: &str| a.refusal(ip.parse().unwrap()).is_none();
        assert!(ok("127.0.0.1") && ok("::ffff:127.0.0.1") && ok("10.9.8.7") && ok("::1"));
        assert!(!ok("127.0.0.2") && !ok("169.254.169.254") && !ok("192.168.0.1"));
        assert!(Addresses::new(&["localhost"]).is_err());
    }
}
