//! `o2g-vmtest CHECK`: one in-guest check per subcommand, run by the harness's
//! test scripts (qemu/tests/*.sh). Exit status 0 means the check passed; on
//! failure the reason goes to stderr, which the harness shows.

use std::os::fd::AsFd;
use std::process::ExitCode;

use libo2g::{abi, raw, Device};

type CheckResult = Result<(), String>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("version") => version(),
        Some("bad-ioctls") => bad_ioctls(),
        Some("hold-open") => hold_open(&args[1..]),
        _ => Err("usage: o2g-vmtest version|bad-ioctls|hold-open SECONDS".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("o2g-vmtest: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Opens /dev/o2g, reads the ABI version, closes.
fn version() -> CheckResult {
    let dev = Device::open().map_err(|e| e.to_string())?;
    let v = dev.version().map_err(|e| e.to_string())?;
    if (v.major, v.minor) != (abi::O2G_ABI_MAJOR, abi::O2G_ABI_MINOR) || v.reserved != 0 {
        return Err(format!("module reports {v:?}, library has {}.{}", abi::O2G_ABI_MAJOR, abi::O2G_ABI_MINOR));
    }
    println!("o2g ABI {}.{}", v.major, v.minor);
    Ok(())
}

/// An unknown opcode gets ENOTTY; the version ioctl with unmapped or kernel
/// addresses gets EFAULT; the device still works afterwards.
fn bad_ioctls() -> CheckResult {
    let dev = Device::open().map_err(|e| e.to_string())?;
    let fd = dev.as_fd();
    let unknown = [
        abi::ioc(abi::IOC_READ, 0xff, 8),
        abi::ioc(abi::IOC_NONE, 0x01, 0),
        0x5401, // TCGETS: another driver's opcode
    ];
    for cmd in unknown {
        // SAFETY: An opcode the module does not know never touches `arg`.
        let r = unsafe { raw::ioctl(fd, cmd, 0) };
        expect_errno(r, libc::ENOTTY, &format!("unknown ioctl {cmd:#x}"))?;
    }
    let bad_pointers = [0usize, 8, usize::MAX - 4095, 0xffff_ffff_8100_0000];
    for ptr in bad_pointers {
        // SAFETY: None of these addresses is mapped writable in this process;
        // the kernel must refuse them without writing anything.
        let r = unsafe { raw::ioctl(fd, abi::O2G_IOC_VERSION, ptr) };
        expect_errno(r, libc::EFAULT, &format!("version ioctl at {ptr:#x}"))?;
    }
    dev.version().map_err(|e| format!("device broken after bad ioctls: {e}"))?;
    Ok(())
}

/// Keeps /dev/o2g open for the given number of seconds (for rmmod-while-open).
fn hold_open(args: &[String]) -> CheckResult {
    let secs: u64 = args.first().and_then(|s| s.parse().ok()).ok_or("hold-open needs SECONDS")?;
    let _dev = Device::open().map_err(|e| e.to_string())?;
    println!("holding /dev/o2g");
    std::thread::sleep(std::time::Duration::from_secs(secs));
    Ok(())
}

fn expect_errno(r: std::io::Result<i32>, want: i32, what: &str) -> CheckResult {
    match r {
        Err(e) if e.raw_os_error() == Some(want) => Ok(()),
        Err(e) => Err(format!("{what}: got {e}, want errno {want}")),
        Ok(v) => Err(format!("{what}: succeeded with {v}, want errno {want}")),
    }
}
