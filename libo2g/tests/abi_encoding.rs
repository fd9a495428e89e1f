//! The ABI's own `_IOC` encoder must agree with an independent one (nix's).

use std::mem::{align_of, size_of};

use libo2g::abi;
use nix::sys::ioctl::ioctl_num_type;

#[test]
fn version_opcode_matches_ior_encoding() {
    let expected = nix::request_code_read!(abi::O2G_IOC_TYPE, 0x00, size_of::<abi::VersionInfo>());
    assert_eq!(abi::O2G_IOC_VERSION as ioctl_num_type, expected);
}

#[test]
fn socket_opcodes_match_iow_ior_encoding() {
    let reg = nix::request_code_write!(
        abi::O2G_IOC_TYPE,
        0x01,
        size_of::<abi::SocketRegistration>()
    );
    let unreg = nix::request_code_write!(abi::O2G_IOC_TYPE, 0x02, size_of::<abi::RankArg>());
    let stats = nix::request_code_read!(abi::O2G_IOC_TYPE, 0x03, size_of::<abi::EndpointStats>());
    assert_eq!(abi::O2G_IOC_REGISTER_SOCKET as ioctl_num_type, reg);
    assert_eq!(abi::O2G_IOC_UNREGISTER_SOCKET as ioctl_num_type, unreg);
    assert_eq!(abi::O2G_IOC_STATS as ioctl_num_type, stats);
}

#[test]
fn encoder_fields_land_where_the_kernel_reads_them() {
    // _IOC_NR, _IOC_TYPE, _IOC_SIZE, _IOC_DIR as in asm-generic/ioctl.h.
    let op = abi::ioc(abi::IOC_READ | abi::IOC_WRITE, 0x2a, 0x123);
    assert_eq!(op & 0xff, 0x2a);
    assert_eq!((op >> 8) & 0xff, abi::O2G_IOC_TYPE);
    assert_eq!((op >> 16) & 0x3fff, 0x123);
    assert_eq!(op >> 30, abi::IOC_READ | abi::IOC_WRITE);
    let rw = nix::request_code_readwrite!(abi::O2G_IOC_TYPE, 0x2a, 0x123);
    assert_eq!(op as ioctl_num_type, rw);
}

#[test]
fn argument_structs_have_fixed_layout() {
    assert_eq!(size_of::<abi::VersionInfo>(), 16);
    assert_eq!(align_of::<abi::VersionInfo>(), 8);
    assert_eq!(std::mem::offset_of!(abi::VersionInfo, features), 8);
    assert_eq!(size_of::<abi::SocketRegistration>(), 16);
    assert_eq!(size_of::<abi::RankArg>(), 8);
    assert_eq!(size_of::<abi::EndpointStats>(), 128);
    assert_eq!(
        std::mem::offset_of!(abi::EndpointStats, data_ready_events),
        8
    );
}

#[test]
fn receive_path_opcodes_match_nix_encoding() {
    use nix::{request_code_readwrite as rw, request_code_write as w};
    let t = abi::O2G_IOC_TYPE;
    let cases: [(&str, u32, ioctl_num_type); 14] = [
        (
            "INIT",
            abi::O2G_IOC_INIT,
            rw!(t, 0x04, size_of::<abi::InitArgs>()),
        ),
        (
            "POST",
            abi::O2G_IOC_POST,
            rw!(t, 0x05, size_of::<abi::PostArgs>()),
        ),
        (
            "CANCEL",
            abi::O2G_IOC_CANCEL,
            w!(t, 0x06, size_of::<abi::IdArg>()),
        ),
        (
            "FREE",
            abi::O2G_IOC_FREE,
            w!(t, 0x07, size_of::<abi::IdArg>()),
        ),
        (
            "POLL",
            abi::O2G_IOC_POLL,
            rw!(t, 0x08, size_of::<abi::PollArgs>()),
        ),
        (
            "PROBE",
            abi::O2G_IOC_PROBE,
            rw!(t, 0x09, size_of::<abi::ProbeArgs>()),
        ),
        (
            "SOCKET_STATS",
            abi::O2G_IOC_SOCKET_STATS,
            rw!(t, 0x0a, size_of::<abi::SocketStats>()),
        ),
        (
            "LIST_ENDPOINTS",
            abi::O2G_IOC_LIST_ENDPOINTS,
            rw!(t, 0x0b, size_of::<abi::EndpointList>()),
        ),
        (
            "OFFER",
            abi::O2G_IOC_OFFER,
            rw!(t, 0x0d, size_of::<abi::OfferArgs>()),
        ),
        (
            "TAKE_CREDIT",
            abi::O2G_IOC_TAKE_CREDIT,
            rw!(t, 0x0f, size_of::<abi::CreditArgs>()),
        ),
        (
            "WIN_REGISTER",
            abi::O2G_IOC_WIN_REGISTER,
            rw!(t, 0x10, size_of::<abi::WindowArgs>()),
        ),
        (
            "WIN_UNREGISTER",
            abi::O2G_IOC_WIN_UNREGISTER,
            w!(t, 0x11, size_of::<abi::IdArg>()),
        ),
        (
            "WIN_STATS",
            abi::O2G_IOC_WIN_STATS,
            rw!(t, 0x12, size_of::<abi::WindowStats>()),
        ),
        (
            "WIN_EPOCH",
            abi::O2G_IOC_WIN_EPOCH,
            w!(t, 0x13, size_of::<abi::WindowEpoch>()),
        ),
    ];
    for (name, ours, nix) in cases {
        assert_eq!(ours as ioctl_num_type, nix, "O2G_IOC_{name}");
    }
}

#[test]
fn opcode_numbers_are_distinct() {
    let all = [
        abi::O2G_IOC_VERSION,
        abi::O2G_IOC_REGISTER_SOCKET,
        abi::O2G_IOC_UNREGISTER_SOCKET,
        abi::O2G_IOC_STATS,
        abi::O2G_IOC_INIT,
        abi::O2G_IOC_POST,
        abi::O2G_IOC_CANCEL,
        abi::O2G_IOC_FREE,
        abi::O2G_IOC_POLL,
        abi::O2G_IOC_PROBE,
        abi::O2G_IOC_SOCKET_STATS,
        abi::O2G_IOC_LIST_ENDPOINTS,
        abi::O2G_IOC_SYNC,
        abi::O2G_IOC_OFFER,
        abi::O2G_IOC_RNDV_STATS,
        abi::O2G_IOC_TAKE_CREDIT,
        abi::O2G_IOC_WIN_REGISTER,
        abi::O2G_IOC_WIN_UNREGISTER,
        abi::O2G_IOC_WIN_STATS,
        abi::O2G_IOC_WIN_EPOCH,
    ];
    // The `nr` byte alone tells them apart, and numbers them 0, 1, 2, ...
    let nrs: Vec<u32> = all.iter().map(|op| op & 0xff).collect();
    assert_eq!(nrs, (0..all.len() as u32).collect::<Vec<_>>());
}

#[test]
fn receive_path_structs_have_fixed_layout() {
    use std::mem::offset_of;

    assert_eq!(size_of::<abi::InitArgs>(), 88);
    assert_eq!(align_of::<abi::InitArgs>(), 8);
    assert_eq!(offset_of!(abi::InitArgs, max_unexpected), 4);
    assert_eq!(offset_of!(abi::InitArgs, dump_bytes), 8);
    assert_eq!(offset_of!(abi::InitArgs, max_message), 16);
    assert_eq!(offset_of!(abi::InitArgs, pin_budget), 24);
    assert_eq!(offset_of!(abi::InitArgs, flags), 32);
    assert_eq!(offset_of!(abi::InitArgs, ring_entries), 36);
    assert_eq!(offset_of!(abi::InitArgs, ring_offset), 40);
    assert_eq!(offset_of!(abi::InitArgs, dump_offset), 48);
    assert_eq!(offset_of!(abi::InitArgs, map_bytes), 56);
    assert_eq!(offset_of!(abi::InitArgs, eager_limit), 64);
    assert_eq!(offset_of!(abi::InitArgs, window_msgs), 72);
    assert_eq!(offset_of!(abi::InitArgs, ranks), 76);
    assert_eq!(offset_of!(abi::InitArgs, eager_slots), 80);
    assert_eq!(offset_of!(abi::InitArgs, reserved), 84);
    assert_eq!(size_of::<abi::CreditArgs>(), 16);
    assert_eq!(offset_of!(abi::CreditArgs, msgs), 4);
    assert_eq!(offset_of!(abi::CreditArgs, bytes), 8);

    assert_eq!(size_of::<abi::StoredMessage>(), 40);
    assert_eq!(offset_of!(abi::StoredMessage, offset), 8);
    assert_eq!(offset_of!(abi::StoredMessage, len), 16);
    assert_eq!(offset_of!(abi::StoredMessage, source), 24);
    assert_eq!(offset_of!(abi::StoredMessage, tag), 28);
    assert_eq!(offset_of!(abi::StoredMessage, context), 32);
    assert_eq!(offset_of!(abi::StoredMessage, flags), 36);

    assert_eq!(size_of::<abi::OfferArgs>(), 40);
    assert_eq!(offset_of!(abi::OfferArgs, len), 8);
    assert_eq!(offset_of!(abi::OfferArgs, user_data), 16);
    assert_eq!(offset_of!(abi::OfferArgs, rank), 24);
    assert_eq!(offset_of!(abi::OfferArgs, flags), 28);
    assert_eq!(offset_of!(abi::OfferArgs, offer), 32);
    assert_eq!(offset_of!(abi::OfferArgs, reserved), 36);
    assert_eq!(offset_of!(abi::SocketRegistration, local_rank), 12);
    assert_eq!(size_of::<abi::RendezvousStats>(), 96);
    assert_eq!(size_of::<abi::WindowArgs>(), 32);
    assert_eq!(offset_of!(abi::WindowArgs, context), 16);
    assert_eq!(offset_of!(abi::WindowArgs, id), 24);
    assert_eq!(size_of::<abi::WindowStats>(), 80);
    assert_eq!(offset_of!(abi::WindowStats, get_bytes), 72);
    assert_eq!(offset_of!(abi::WindowArgs, ranks), 28);
    assert_eq!(offset_of!(abi::WindowStats, placed_msgs), 8);
    assert_eq!(offset_of!(abi::WindowStats, unknown_msgs), 40);
    assert_eq!(
        abi::O2G_IOC_RNDV_STATS as ioctl_num_type,
        nix::request_code_read!(abi::O2G_IOC_TYPE, 0x0e, size_of::<abi::RendezvousStats>())
    );

    assert_eq!(size_of::<abi::PostArgs>(), 96);
    assert_eq!(offset_of!(abi::PostArgs, buf_len), 8);
    assert_eq!(offset_of!(abi::PostArgs, user_data), 16);
    assert_eq!(offset_of!(abi::PostArgs, source), 24);
    assert_eq!(offset_of!(abi::PostArgs, tag), 28);
    assert_eq!(offset_of!(abi::PostArgs, context), 32);
    assert_eq!(offset_of!(abi::PostArgs, flags), 36);
    assert_eq!(offset_of!(abi::PostArgs, outcome), 40);
    assert_eq!(offset_of!(abi::PostArgs, ring_seen), 44);
    assert_eq!(offset_of!(abi::PostArgs, recv_id), 48);
    assert_eq!(offset_of!(abi::PostArgs, msg), 56);

    assert_eq!(size_of::<abi::ProbeArgs>(), 64);
    assert_eq!(offset_of!(abi::ProbeArgs, flags), 12);
    assert_eq!(offset_of!(abi::ProbeArgs, outcome), 16);
    assert_eq!(offset_of!(abi::ProbeArgs, msg), 24);

    assert_eq!(size_of::<abi::IdArg>(), 8);
    assert_eq!(size_of::<abi::PollArgs>(), 16);
    assert_eq!(offset_of!(abi::PollArgs, events), 8);

    // The ring record: 64 bytes, one cache line, never straddling a page.
    assert_eq!(size_of::<abi::Completion>(), 64);
    assert_eq!(align_of::<abi::Completion>(), 8);
    assert_eq!(offset_of!(abi::Completion, len), 8);
    assert_eq!(offset_of!(abi::Completion, source), 16);
    assert_eq!(offset_of!(abi::Completion, tag), 20);
    assert_eq!(offset_of!(abi::Completion, context), 24);
    assert_eq!(offset_of!(abi::Completion, status), 28);
    assert_eq!(offset_of!(abi::Completion, kind), 32);
    assert_eq!(offset_of!(abi::Completion, msg_id), 40);
    assert_eq!(offset_of!(abi::Completion, offset), 48);

    assert_eq!(offset_of!(abi::EndpointStats, protocol_errors), 64);
    assert_eq!(offset_of!(abi::EndpointStats, posted), 72);
    assert_eq!(offset_of!(abi::EndpointStats, unexpected), 76);
    assert_eq!(offset_of!(abi::EndpointStats, dump_used), 80);
    assert_eq!(offset_of!(abi::EndpointStats, pinned_bytes), 88);
    assert_eq!(offset_of!(abi::EndpointStats, notices), 96);
    assert_eq!(offset_of!(abi::EndpointStats, bad_releases), 112);
    assert_eq!(offset_of!(abi::EndpointStats, deferred_copies), 120);

    assert_eq!(size_of::<abi::SocketStats>(), 40);
    assert_eq!(offset_of!(abi::SocketStats, state), 4);
    assert_eq!(offset_of!(abi::SocketStats, rx_bytes), 8);
    assert_eq!(offset_of!(abi::SocketStats, backpressure_events), 32);

    assert_eq!(size_of::<abi::EndpointSummary>(), 136);
    assert_eq!(offset_of!(abi::EndpointSummary, endpoint), 4);
    assert_eq!(offset_of!(abi::EndpointSummary, stats), 8);

    assert_eq!(size_of::<abi::EndpointList>(), 16);
    assert_eq!(offset_of!(abi::EndpointList, capacity), 8);
    assert_eq!(offset_of!(abi::EndpointList, count), 12);
}

// The ring indices sit in the control page, on separate cache lines, and
// ranks never collide with the ANY_SOURCE sentinel the library maps `None` to.
const _: () = assert!(abi::O2G_RING_PROD + 64 <= abi::O2G_RING_CONS);
const _: () = assert!(abi::O2G_RING_CONS + 4 <= abi::O2G_PAGE as usize);
const _: () = assert!(abi::O2G_MAX_RANK - 1 < abi::O2G_ANY_SOURCE);
// The notice words and the release ring follow, each index on its own line.
const _: () = assert!(abi::O2G_RING_CONS + 64 <= abi::O2G_NOTICES_STOPPED);
const _: () = assert!(abi::O2G_NOTICES_STOPPED + 64 <= abi::O2G_STALLED);
const _: () = assert!(abi::O2G_STALLED + 64 <= abi::O2G_RELEASE_PROD);
const _: () = assert!(abi::O2G_RELEASE_PROD + 64 <= abi::O2G_RELEASE_CONS);
const _: () = assert!(abi::O2G_RELEASE_CONS + 64 <= abi::O2G_RELEASE_RING);
const _: () = assert!(
    abi::O2G_RELEASE_RING + 8 * abi::O2G_RELEASE_ENTRIES as usize <= abi::O2G_PAGE as usize
);

#[test]
fn sync_moves_no_data() {
    assert_eq!(
        abi::O2G_IOC_SYNC as ioctl_num_type,
        nix::request_code_none!(abi::O2G_IOC_TYPE, 0x0c)
    );
}

#[test]
fn sentinels_are_all_ones() {
    assert_eq!(abi::O2G_ANY_SOURCE, u32::MAX);
    assert_eq!(abi::O2G_ANY_TAG, u32::MAX);
}
