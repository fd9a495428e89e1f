//! The address a process listens on and publishes to its peers
//! (`O2G_ADDR`).
//!
//! One node's jobs can all use loopback, the default. A job that spans
//! nodes needs an address the other nodes reach, and one value of
//! `O2G_ADDR` cannot name every node's: `O2G_ADDR=auto` takes this node's
//! first interface that is up, not loopback and has an IPv4 address (or
//! the one named by `O2G_IF`). Under Slurm, a job step on more than one
//! node (`SLURM_STEP_NUM_NODES`) means `auto` unless `O2G_ADDR` says
//! otherwise.

use std::net::IpAddr;

use crate::error::{Error, Result};

/// One network interface's address, as `getifaddrs` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Interface {
    pub(crate) name: String,
    pub(crate) addr: IpAddr,
    pub(crate) up: bool,
    pub(crate) loopback: bool,
}

/// What the environment asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Choice {
    Ip(IpAddr),
    /// An interface's address; `Some(name)`: that interface's.
    Auto(Option<String>),
}

/// The choice the variables make: `O2G_ADDR` (an IP address or `auto`),
/// `O2G_IF` (the interface `auto` takes), `SLURM_STEP_NUM_NODES`.
fn choose(var: &dyn Fn(&str) -> Option<String>) -> Result<Choice> {
    let iface = var("O2G_IF").filter(|s| !s.is_empty());
    match var("O2G_ADDR").as_deref().map(str::trim) {
        Some("auto") => Ok(Choice::Auto(iface)),
        Some(ip) => ip
            .parse()
            .map(Choice::Ip)
            .map_err(|_| Error::Config(format!("O2G_ADDR={ip:?} is not an IP address or `auto`"))),
        None => {
            let nodes = var("SLURM_STEP_NUM_NODES").and_then(|n| n.trim().parse::<u32>().ok());
            if nodes.is_some_and(|n| n > 1) || iface.is_some() {
                Ok(Choice::Auto(iface))
            } else {
                Ok(Choice::Ip(IpAddr::from([127, 0, 0, 1])))
            }
        }
    }
}

/// `auto`'s address among `interfaces`: the first IPv4 one that is up and
/// not loopback (of interface `name`, if given).
fn pick(interfaces: &[Interface], name: Option<&str>) -> Result<IpAddr> {
    interfaces
        .iter()
        .find(|i| i.up && !i.loopback && i.addr.is_ipv4() && name.is_none_or(|n| i.name == n))
        .map(|i| i.addr)
        .ok_or_else(|| {
            let listed: Vec<String> = interfaces
                .iter()
                .map(|i| format!("{} {}{}", i.name, i.addr, if i.up { "" } else { " (down)" }))
                .collect();
            Error::Config(match name {
                Some(n) => format!(
                    "O2G_IF={n}: no IPv4 address on an interface of that name that is up \
                     (this node has: {}); set O2G_ADDR",
                    listed.join(", ")
                ),
                None => format!(
                    "O2G_ADDR=auto (a job on several nodes): no interface but loopback has \
                     an IPv4 address (this node has: {}); set O2G_ADDR or O2G_IF",
                    listed.join(", ")
                ),
            })
        })
}

/// This node's interfaces.
fn host_interfaces() -> Result<Vec<Interface>> {
    use nix::net::if_::InterfaceFlags;
    let list = nix::ifaddrs::getifaddrs()
        .map_err(|e| Error::Config(format!("O2G_ADDR=auto: listing network interfaces: {e}")))?;
    Ok(list
        .filter_map(|i| {
            let addr = i.address?;
            let ip = IpAddr::from(addr.as_sockaddr_in()?.ip());
            Some(Interface {
                name: i.interface_name,
                addr: ip,
                up: i.flags.contains(InterfaceFlags::IFF_UP),
                loopback: i.flags.contains(InterfaceFlags::IFF_LOOPBACK),
            })
        })
        .collect())
}

/// The address to listen on, as the variables (read through `var`) say.
pub(crate) fn from_env(var: &dyn Fn(&str) -> Option<String>) -> Result<IpAddr> {
    match choose(var)? {
        Choice::Ip(ip) => Ok(ip),
        Choice::Auto(name) => pick(&host_interfaces()?, name.as_deref()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn iface(name: &str, addr: [u8; 4], up: bool) -> Interface {
        Interface {
            name: name.into(),
            addr: IpAddr::from(addr),
            up,
            loopback: name == "lo",
        }
    }

    #[test]
    fn loopback_unless_told_or_slurm_spans_nodes() {
        let lo = Choice::Ip(IpAddr::from([127, 0, 0, 1]));
        assert_eq!(choose(&env(&[])).unwrap(), lo);
        assert_eq!(choose(&env(&[("SLURM_STEP_NUM_NODES", "1")])).unwrap(), lo);
        assert_eq!(
            choose(&env(&[("SLURM_STEP_NUM_NODES", "3")])).unwrap(),
            Choice::Auto(None)
        );
        assert_eq!(
            choose(&env(&[
                ("SLURM_STEP_NUM_NODES", "3"),
                ("O2G_ADDR", "10.1.2.3")
            ]))
            .unwrap(),
            Choice::Ip(IpAddr::from([10, 1, 2, 3]))
        );
        assert_eq!(
            choose(&env(&[("O2G_ADDR", "auto"), ("O2G_IF", "eth1")])).unwrap(),
            Choice::Auto(Some("eth1".into()))
        );
        assert!(choose(&env(&[("O2G_ADDR", "eth0")])).is_err());
    }

    #[test]
    fn auto_takes_the_first_up_ipv4_interface_but_loopback() {
        let list = [
            iface("lo", [127, 0, 0, 1], true),
            iface("eth0", [10, 0, 0, 5], false),
            iface("eth1", [198, 18, 0, 2], true),
            iface("eth2", [192, 168, 1, 9], true),
        ];
        assert_eq!(pick(&list, None).unwrap(), IpAddr::from([198, 18, 0, 2]));
        assert_eq!(
            pick(&list, Some("eth2")).unwrap(),
            IpAddr::from([192, 168, 1, 9])
        );
        let e = pick(&list, Some("eth0")).unwrap_err().to_string();
        assert!(
            e.contains("O2G_IF=eth0") && e.contains("eth0 10.0.0.5 (down)"),
            "{e}"
        );
        let e = pick(&list[..1], None).unwrap_err().to_string();
        assert!(e.contains("no interface but loopback"), "{e}");
    }
}
