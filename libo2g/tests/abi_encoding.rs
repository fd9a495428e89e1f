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
    assert_eq!(size_of::<abi::EndpointStats>(), 96);
    assert_eq!(
        std::mem::offset_of!(abi::EndpointStats, data_ready_events),
        8
    );
}
