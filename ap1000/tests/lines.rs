//! Line sending driven store by store, and what the hardware refuses.

use o2g_ap1000::command::{LSEND, LSENDE};
use o2g_ap1000::header::Header;
use o2g_ap1000::{Config, Error, Filter, Machine, ReceiveMode, SendMode};

fn machine(receive: ReceiveMode) -> Machine {
    Machine::new(
        3,
        Config {
            memory_bytes: 1 << 20,
            header_addr: (1 << 20) - 32,
            ring_bytes: 64 << 10,
            ..Config::ap1000(receive)
        },
    )
    .unwrap()
}

#[test]
fn stores_to_command_addresses_send_a_message() {
    let m = machine(ReceiveMode::Ring);
    let (a, c) = (m.cell(0).unwrap(), m.cell(2).unwrap());
    // The program builds its own header at 0x2000 and a 20-byte body at
    // 0x3004 (alignment 4: two body lines), then stores to LSEND/LSENDE
    // addresses as §4.1's assembly does.
    let h = Header {
        dest: 2,
        len: 20,
        align: 4,
        src: 0,
        used: 0,
        id: 5,
        tag: 9,
    };
    a.write(0x2000, &h.to_bytes()).unwrap();
    a.write(0x3004, b"twenty bytes, really").unwrap();
    for store in [
        LSEND + 0x2000,
        LSEND + 0x2010,
        LSEND + 0x3000,
        LSENDE + 0x3010,
    ] {
        a.store_command(store).unwrap();
    }
    let mut got = Vec::new();
    let info = c
        .recv(
            Filter {
                src: Some(0),
                tag: Some(9),
            },
            &mut got,
        )
        .unwrap();
    assert_eq!(got, b"twenty bytes, really");
    assert_eq!(info.len, 20);
    assert!(matches!(
        a.store_command(0x2000),
        Err(Error::BadCommand(0x2000))
    ));
}

#[test]
fn the_end_bit_must_close_the_message_the_header_announced() {
    let m = machine(ReceiveMode::Ring);
    let a = m.cell(0).unwrap();
    let h = Header {
        dest: 1,
        len: 10,
        ..Header::default()
    };
    a.write(0x2000, &h.to_bytes()).unwrap();
    assert!(matches!(a.lsende(0x2000), Err(Error::BadMessage(_))));
    a.lsend(0x2000).unwrap();
    a.lsend(0x2010).unwrap();
    // One body line: it must carry the end bit.
    assert!(matches!(a.lsend(0x3000), Err(Error::BadMessage(_))));
    a.lsende(0x3000).unwrap();
    // A header naming a cell that does not exist.
    a.write(0x2000, &Header { dest: 7, ..h }.to_bytes())
        .unwrap();
    assert!(matches!(a.lsend(0x2000), Err(Error::BadMessage(_))));
}

#[test]
fn messages_larger_than_the_ring_or_512_kib_are_refused() {
    let m = machine(ReceiveMode::Ring);
    let a = m.cell(0).unwrap();
    let r = a.send(1, 0, 0, 64 << 10, SendMode::Line);
    assert!(matches!(r, Err(Error::TooLarge { .. })), "{r:?}");
    let m = machine(ReceiveMode::Dma);
    let a = m.cell(0).unwrap();
    let r = a.send(1, 0, 0, (512 << 10) + 1, SendMode::Dma);
    assert!(matches!(r, Err(Error::TooLarge { .. })), "{r:?}");
}

#[test]
fn receives_select_by_sender_and_type() {
    let m = machine(ReceiveMode::Ring);
    let (a, b, c) = (m.cell(0).unwrap(), m.cell(1).unwrap(), m.cell(2).unwrap());
    a.write(0x100, b"from a").unwrap();
    b.write(0x100, b"from b").unwrap();
    a.send(2, 1, 0x100, 6, SendMode::Line).unwrap();
    b.send(2, 2, 0x100, 6, SendMode::Dma).unwrap();
    let mut got = Vec::new();
    c.recv(
        Filter {
            src: Some(1),
            tag: None,
        },
        &mut got,
    )
    .unwrap();
    assert_eq!(got, b"from b");
    c.recv(
        Filter {
            src: None,
            tag: Some(1),
        },
        &mut got,
    )
    .unwrap();
    assert_eq!(got, b"from a");
}
