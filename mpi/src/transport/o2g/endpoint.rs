//! Opening `/dev/o2g` and sizing this process's endpoint, its eager
//! credit included.

use libo2g::{abi, CreditConfig, Device, Endpoint, EndpointConfig};

use crate::config::Config;
use crate::error::{Error, Result};

use super::QUEUE;

/// Opens `/dev/o2g` and creates this process's endpoint, sized from the
/// configuration, granting eager credit to `connections` messages
/// connections (ranks below it). Fails with
/// [`Error::TransportUnavailable`] when the module is not loaded or
/// refuses.
pub(crate) fn open_endpoint(config: &Config, connections: u32) -> Result<(Endpoint, u64)> {
    let unavailable = |reason: String| Error::TransportUnavailable {
        name: "o2g".into(),
        reason,
    };
    let max_message = config.max_message.min(abi::O2G_MAX_MESSAGE);
    let cfg = EndpointConfig {
        max_posted: QUEUE,
        max_unexpected: QUEUE,
        dump_bytes: config.o2g.dump_bytes,
        max_message,
        pin_budget: config.o2g.pin_budget,
        notices: true,
        credit: Some(credit_for(config, connections, max_message)?),
    };
    let eager_limit = cfg.credit.map_or(0, |c| c.eager_limit);
    let dump = cfg.dump_bytes;
    Device::open()
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::EMFILE) => unavailable(
                "this process already has the most o2g endpoints the module allows (16)".into(),
            ),
            _ => unavailable(e.to_string()),
        })?
        .init(cfg)
        .and_then(|ep| {
            let v = ep.version()?;
            if v.features & abi::feature::RENDEZVOUS == 0 {
                return Err(libo2g::Error::InvalidArgument(format!(
                    "the loaded o2g module (ABI {}.{}) has no rendezvous; load the o2g.ko \
                     built with this library (ABI {}.{})",
                    v.major,
                    v.minor,
                    abi::O2G_ABI_MAJOR,
                    abi::O2G_ABI_MINOR
                )));
            }
            Ok(ep)
        })
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ENOMEM) => unavailable(format!(
                "creating the endpoint: no memory for its {dump}-byte dump area \
                 (charged to this process's memory cgroup; lower O2G_DUMP_BYTES or \
                 raise the cgroup's memory.max): {e}"
            )),
            _ => unavailable(format!("creating the endpoint: {e}")),
        })
        .map(|ep| (ep, eager_limit))
}

/// The eager credit an endpoint grants: each connection's rank gets a
/// ring of the dump area (`O2G_DUMP_BYTES` over the connections) and a
/// window of at most `O2G_EAGER_CREDIT_MSGS` messages (fewer if the
/// unexpected queue could not hold them all), of up to the longer of the
/// two eager limits (this host's and other hosts') each, or of what the
/// ring has room for: a lower eager limit, which every rank of the job
/// computes alike from the same settings.
pub(super) fn credit_for(
    config: &Config,
    connections: u32,
    max_message: u64,
) -> Result<CreditConfig> {
    let ranks = connections.max(1);
    let window_msgs = (QUEUE / ranks).clamp(1, config.eager_credit.msgs);
    let probe = CreditConfig {
        eager_limit: 1,
        window_msgs,
        ranks,
    };
    let largest = probe.largest(config.o2g.dump_bytes);
    if largest == 0 {
        return Err(Error::Config(format!(
            "o2g: the dump area (O2G_DUMP_BYTES={}) is too small to give each of the \
             {ranks} connections a ring for {window_msgs} eager messages; raise \
             O2G_DUMP_BYTES",
            config.o2g.dump_bytes
        )));
    }
    Ok(CreditConfig {
        eager_limit: config
            .o2g
            .eager_local
            .max(config.o2g.eager_remote)
            .min(max_message)
            .min(largest)
            .max(1),
        ..probe
    })
}
