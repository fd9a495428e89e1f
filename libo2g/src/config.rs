//! The capacities an endpoint asks for at `O2G_IOC_INIT`.

use o2g_core::proto::{credit::Window, sender_rings};

use crate::{abi, Error, Result};

/// Capacities of an endpoint, checked against the ABI's limits before the
/// module is asked (see [`abi::InitArgs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointConfig {
    /// Most receives posted at once, `1..=O2G_MAX_QUEUE`.
    pub max_posted: u32,
    /// Most unexpected messages stored at once, `1..=O2G_MAX_QUEUE`.
    pub max_unexpected: u32,
    /// Size of the dump area for unexpected payloads, a multiple of
    /// [`abi::O2G_PAGE`] in `O2G_PAGE..=O2G_MAX_DUMP`.
    pub dump_bytes: u64,
    /// Largest message accepted from a peer, `..=O2G_MAX_MESSAGE`.
    pub max_message: u64,
    /// Most bytes of posted receive buffers pinned at once,
    /// `..=O2G_MAX_PIN_BUDGET`.
    pub pin_budget: u64,
    /// Ask for announcements of stored messages ([`abi::O2G_INIT_NOTICES`]):
    /// [`Endpoint::reap`](crate::Endpoint::reap) then also returns
    /// [`Reaped::Stored`](crate::Reaped::Stored).
    pub notices: bool,
    /// Grant eager credit ([`abi::O2G_INIT_CREDIT`]); `None`: take eager
    /// messages of any length without credit.
    pub credit: Option<CreditConfig>,
}

/// Eager credit for an endpoint (see [`abi::O2G_INIT_CREDIT`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreditConfig {
    /// Longest eager message accepted, at least 1, at most `max_message`
    /// and [`CreditConfig::largest`].
    pub eager_limit: u64,
    /// Eager messages each peer may leave stored, at least 1;
    /// `window_msgs * ranks` at most `max_unexpected`.
    pub window_msgs: u32,
    /// Peers have ranks below this, `1..=O2G_MAX_SOCKETS`.
    pub ranks: u32,
}

impl CreditConfig {
    /// Bytes of a dump area of `dump_bytes` that each rank's ring gets, as
    /// the module cuts it.
    pub fn region(&self, dump_bytes: u64) -> u64 {
        sender_rings::region_for(dump_bytes, self.ranks.max(1))
    }

    /// The longest `eager_limit` a dump area of `dump_bytes` can grant
    /// `window_msgs` messages of to each rank; 0 if none.
    pub fn largest(&self, dump_bytes: u64) -> u64 {
        sender_rings::largest_for(self.region(dump_bytes), self.window_msgs)
    }

    /// The window each peer gets, as the module computes it (`None`: the
    /// ring has no room for one message of `eager_limit`).
    pub fn window(&self, dump_bytes: u64) -> Option<Window> {
        sender_rings::window_for(self.region(dump_bytes), self.window_msgs, self.eager_limit)
    }

    /// Eager messages the dump area holds at most, all peers together
    /// (the module's `eager_slots`).
    pub fn records(&self) -> u64 {
        u64::from(self.window_msgs) * u64::from(self.ranks)
    }
}

impl Default for EndpointConfig {
    /// 1024 posted receives, 4096 unexpected messages, a 16 MiB dump area,
    /// 64 MiB messages, a 256 MiB pin budget, no announcements.
    fn default() -> Self {
        Self {
            max_posted: 1024,
            max_unexpected: 4096,
            dump_bytes: 16 << 20,
            max_message: 64 << 20,
            pin_budget: 256 << 20,
            notices: false,
            credit: None,
        }
    }
}

impl EndpointConfig {
    /// Checks every field against the ABI's limits.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidConfig`] naming the first offending field.
    pub fn validate(&self) -> Result<()> {
        let queue = 1..=abi::O2G_MAX_QUEUE;
        if !queue.contains(&self.max_posted) {
            return Err(invalid(
                "max_posted",
                out_of_range(self.max_posted, 1, abi::O2G_MAX_QUEUE),
            ));
        }
        if !queue.contains(&self.max_unexpected) {
            return Err(invalid(
                "max_unexpected",
                out_of_range(self.max_unexpected, 1, abi::O2G_MAX_QUEUE),
            ));
        }
        if !(abi::O2G_PAGE..=abi::O2G_MAX_DUMP).contains(&self.dump_bytes) {
            return Err(invalid(
                "dump_bytes",
                out_of_range(self.dump_bytes, abi::O2G_PAGE, abi::O2G_MAX_DUMP),
            ));
        }
        if self.dump_bytes % abi::O2G_PAGE != 0 {
            return Err(invalid(
                "dump_bytes",
                format!(
                    "{} is not a multiple of the {}-byte page",
                    self.dump_bytes,
                    abi::O2G_PAGE
                ),
            ));
        }
        if self.max_message > abi::O2G_MAX_MESSAGE {
            return Err(invalid(
                "max_message",
                out_of_range(self.max_message, 0, abi::O2G_MAX_MESSAGE),
            ));
        }
        if self.pin_budget > abi::O2G_MAX_PIN_BUDGET {
            return Err(invalid(
                "pin_budget",
                out_of_range(self.pin_budget, 0, abi::O2G_MAX_PIN_BUDGET),
            ));
        }
        if let Some(c) = self.credit {
            if !(1..=abi::O2G_MAX_SOCKETS).contains(&c.ranks) {
                return Err(invalid(
                    "credit.ranks",
                    out_of_range(c.ranks, 1, abi::O2G_MAX_SOCKETS),
                ));
            }
            if c.window_msgs == 0 {
                return Err(invalid("credit.window_msgs", "must be at least 1".into()));
            }
            if c.records() > u64::from(self.max_unexpected) {
                return Err(invalid(
                    "credit.window_msgs",
                    format!(
                        "{} for each of {} ranks is more than max_unexpected ({})",
                        c.window_msgs, c.ranks, self.max_unexpected
                    ),
                ));
            }
            let most = c.largest(self.dump_bytes).min(self.max_message);
            if !(1..=most).contains(&c.eager_limit) {
                return Err(invalid(
                    "credit.eager_limit",
                    format!(
                        "{} is outside 1..={most} (max_message, and what each rank's \
                         {}-byte ring of the dump area has room for)",
                        c.eager_limit,
                        c.region(self.dump_bytes)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The `O2G_IOC_INIT` argument asking for these capacities.
    pub(crate) fn to_init_args(self) -> abi::InitArgs {
        abi::InitArgs {
            max_posted: self.max_posted,
            max_unexpected: self.max_unexpected,
            dump_bytes: self.dump_bytes,
            max_message: self.max_message,
            pin_budget: self.pin_budget,
            flags: if self.notices {
                abi::O2G_INIT_NOTICES
            } else {
                0
            } | if self.credit.is_some() {
                abi::O2G_INIT_CREDIT
            } else {
                0
            },
            eager_limit: self.credit.map_or(0, |c| c.eager_limit),
            window_msgs: self.credit.map_or(0, |c| c.window_msgs),
            ranks: self.credit.map_or(0, |c| c.ranks),
            ..Default::default()
        }
    }
}

fn invalid(field: &'static str, problem: String) -> Error {
    Error::InvalidConfig { field, problem }
}

fn out_of_range(
    value: impl std::fmt::Display,
    min: impl std::fmt::Display,
    max: impl std::fmt::Display,
) -> String {
    format!("{value} is outside {min}..={max}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(cfg: EndpointConfig) -> &'static str {
        match cfg.validate() {
            Err(Error::InvalidConfig { field, .. }) => field,
            other => panic!("expected InvalidConfig, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_valid_and_as_documented() {
        let cfg = EndpointConfig::default();
        cfg.validate().unwrap();
        assert_eq!(cfg.max_posted, 1024);
        assert_eq!(cfg.max_unexpected, 4096);
        assert_eq!(cfg.dump_bytes, 16 << 20);
        assert_eq!(cfg.max_message, 64 << 20);
        assert_eq!(cfg.pin_budget, 256 << 20);
    }

    #[test]
    fn limits_are_inclusive() {
        let cfg = EndpointConfig {
            max_posted: abi::O2G_MAX_QUEUE,
            max_unexpected: 1,
            dump_bytes: abi::O2G_MAX_DUMP,
            max_message: abi::O2G_MAX_MESSAGE,
            pin_budget: abi::O2G_MAX_PIN_BUDGET,
            notices: true,
            credit: Some(CreditConfig {
                eager_limit: sender_rings::largest_for(abi::O2G_MAX_DUMP, 1),
                window_msgs: 1,
                ranks: 1,
            }),
        };
        cfg.validate().unwrap();
        let most_ranks = EndpointConfig {
            max_unexpected: abi::O2G_MAX_SOCKETS,
            credit: Some(CreditConfig {
                eager_limit: 1,
                window_msgs: 1,
                ranks: abi::O2G_MAX_SOCKETS,
            }),
            ..cfg
        };
        most_ranks.validate().unwrap();
        let small = EndpointConfig {
            max_posted: 1,
            max_unexpected: abi::O2G_MAX_QUEUE,
            dump_bytes: abi::O2G_PAGE,
            max_message: 0,
            pin_budget: 0,
            notices: false,
            credit: None,
        };
        small.validate().unwrap();
    }

    #[test]
    fn each_field_out_of_range_is_named() {
        let d = EndpointConfig::default();
        let cases = [
            (EndpointConfig { max_posted: 0, ..d }, "max_posted"),
            (
                EndpointConfig {
                    max_posted: abi::O2G_MAX_QUEUE + 1,
                    ..d
                },
                "max_posted",
            ),
            (
                EndpointConfig {
                    max_unexpected: 0,
                    ..d
                },
                "max_unexpected",
            ),
            (
                EndpointConfig {
                    max_unexpected: abi::O2G_MAX_QUEUE + 1,
                    ..d
                },
                "max_unexpected",
            ),
            (EndpointConfig { dump_bytes: 0, ..d }, "dump_bytes"),
            (
                EndpointConfig {
                    dump_bytes: abi::O2G_PAGE - 1,
                    ..d
                },
                "dump_bytes",
            ),
            (
                EndpointConfig {
                    dump_bytes: abi::O2G_PAGE * 3 + 8,
                    ..d
                },
                "dump_bytes",
            ),
            (
                EndpointConfig {
                    dump_bytes: abi::O2G_MAX_DUMP + abi::O2G_PAGE,
                    ..d
                },
                "dump_bytes",
            ),
            (
                EndpointConfig {
                    max_message: abi::O2G_MAX_MESSAGE + 1,
                    ..d
                },
                "max_message",
            ),
            (
                EndpointConfig {
                    pin_budget: abi::O2G_MAX_PIN_BUDGET + 1,
                    ..d
                },
                "pin_budget",
            ),
            (with_credit(d, 0, 1, 1), "credit.eager_limit"),
            (with_credit(d, d.dump_bytes / 2, 1, 1), "credit.eager_limit"),
            (
                with_credit(d, 64, 2, d.max_unexpected),
                "credit.window_msgs",
            ),
            (with_credit(d, 64, 0, 1), "credit.window_msgs"),
            (with_credit(d, 64, 1, 0), "credit.ranks"),
            (
                with_credit(d, 64, 1, abi::O2G_MAX_SOCKETS + 1),
                "credit.ranks",
            ),
        ];
        for (cfg, want) in cases {
            assert_eq!(field_of(cfg), want, "{cfg:?}");
        }
    }

    fn with_credit(
        d: EndpointConfig,
        eager_limit: u64,
        window_msgs: u32,
        ranks: u32,
    ) -> EndpointConfig {
        EndpointConfig {
            credit: Some(CreditConfig {
                eager_limit,
                window_msgs,
                ranks,
            }),
            ..d
        }
    }

    #[test]
    fn error_message_says_what_is_wrong() {
        let cfg = EndpointConfig {
            dump_bytes: 5000,
            ..Default::default()
        };
        let msg = cfg.validate().unwrap_err().to_string();
        assert!(
            msg.contains("dump_bytes") && msg.contains("multiple"),
            "{msg}"
        );
        assert_eq!(
            cfg.validate().unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn init_args_carry_the_inputs_and_zero_everything_else() {
        let cfg = EndpointConfig::default();
        let args = cfg.to_init_args();
        assert_eq!(args.max_posted, cfg.max_posted);
        assert_eq!(args.max_unexpected, cfg.max_unexpected);
        assert_eq!(args.dump_bytes, cfg.dump_bytes);
        assert_eq!(args.max_message, cfg.max_message);
        assert_eq!(args.pin_budget, cfg.pin_budget);
        assert_eq!(args.flags, 0);
        assert_eq!(
            (
                args.ring_entries,
                args.ring_offset,
                args.dump_offset,
                args.map_bytes
            ),
            (0, 0, 0, 0)
        );
        let credited = with_credit(cfg, 4096, 8, 3).to_init_args();
        assert_eq!(credited.flags, abi::O2G_INIT_CREDIT);
        assert_eq!(
            (
                credited.eager_limit,
                credited.window_msgs,
                credited.ranks,
                credited.eager_slots
            ),
            (4096, 8, 3, 0)
        );
    }
}
