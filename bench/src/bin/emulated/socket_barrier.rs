//! The Fagus barrier's algorithm over sockets, the baseline of the Fagus
//! paper's Table 2: node 0 waits for a SYNC_ENTRY message from every
//! other node, then sends each a SYNC_PERMIT. Fagus ran it over UDP; TCP
//! is our addition. Messages are the barrier's 4-byte epoch, on loopback
//! between the threads of this process.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// A lost datagram or a dead peer ends the run instead of hanging it.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Which sockets carry the messages.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Carrier {
    /// One UDP socket per node.
    Udp,
    /// One TCP connection (TCP_NODELAY) per child to node 0.
    Tcp,
}

/// One node's end: how it sends to and receives from the others.
enum End {
    Udp {
        sock: UdpSocket,
        peers: Vec<SocketAddr>,
    },
    /// Node 0 holds a stream per child (index 0 unused); a child one.
    Tcp(Vec<Option<TcpStream>>),
}

impl End {
    fn send(&mut self, to: usize, epoch: u32) -> Res<()> {
        match self {
            End::Udp { sock, peers } => {
                sock.send_to(&epoch.to_le_bytes(), peers[to])?;
            }
            End::Tcp(s) => s[to]
                .as_mut()
                .ok_or("no stream")?
                .write_all(&epoch.to_le_bytes())?,
        }
        Ok(())
    }

    /// Receives one epoch (from `from`, for TCP; from anyone for UDP).
    fn recv(&mut self, from: usize) -> Res<u32> {
        let mut b = [0u8; 4];
        match self {
            End::Udp { sock, .. } => {
                let (n, _) = sock.recv_from(&mut b)?;
                if n != 4 {
                    return Err(format!("a {n}-byte barrier message").into());
                }
            }
            End::Tcp(s) => s[from].as_mut().ok_or("no stream")?.read_exact(&mut b)?,
        }
        Ok(u32::from_le_bytes(b))
    }

    /// One barrier of `epoch` on node `me` of `n`.
    fn barrier(&mut self, me: usize, n: usize, epoch: u32) -> Res<()> {
        let check = |got: u32| {
            if got == epoch {
                Ok(())
            } else {
                Err(format!("epoch {got} in barrier {epoch}"))
            }
        };
        if me == 0 {
            for child in 1..n {
                check(self.recv(child)?)?;
            }
            for child in 1..n {
                self.send(child, epoch)?;
            }
        } else {
            self.send(0, epoch)?;
            check(self.recv(0)?)?;
        }
        Ok(())
    }
}

fn ends(carrier: Carrier, n: usize) -> Res<Vec<End>> {
    let lo = (Ipv4Addr::LOCALHOST, 0);
    match carrier {
        Carrier::Udp => {
            let socks = (0..n)
                .map(|_| UdpSocket::bind(lo))
                .collect::<std::io::Result<Vec<_>>>()?;
            let peers = socks
                .iter()
                .map(UdpSocket::local_addr)
                .collect::<std::io::Result<Vec<_>>>()?;
            socks
                .into_iter()
                .map(|sock| {
                    sock.set_read_timeout(Some(TIMEOUT))?;
                    Ok(End::Udp {
                        sock,
                        peers: peers.clone(),
                    })
                })
                .collect()
        }
        Carrier::Tcp => {
            let listener = TcpListener::bind(lo)?;
            let at = listener.local_addr()?;
            let mut root = vec![None];
            let mut children = vec![End::Tcp(Vec::new())];
            for _ in 1..n {
                let child = TcpStream::connect(at)?;
                let (parent, _) = listener.accept()?;
                for s in [&child, &parent] {
                    s.set_nodelay(true)?;
                    s.set_read_timeout(Some(TIMEOUT))?;
                }
                root.push(Some(parent));
                children.push(End::Tcp(vec![Some(child)]));
            }
            children[0] = End::Tcp(root);
            Ok(children)
        }
    }
}

/// Microseconds per barrier at `n` nodes over `carrier`: the median over
/// `reps` runs of `iters` barriers, each run after one warm-up barrier.
pub(crate) fn time(carrier: Carrier, n: usize, iters: usize, reps: usize) -> Res<f64> {
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let mut all = ends(carrier, n)?;
        let root = all.remove(0);
        let t = std::thread::scope(|s| -> Res<Duration> {
            let children: Vec<_> = all
                .into_iter()
                .enumerate()
                .map(|(i, mut end)| {
                    s.spawn(move || -> Res<()> {
                        (0..=iters as u32).try_for_each(|e| end.barrier(i + 1, n, e))
                    })
                })
                .collect();
            let mut root = root;
            root.barrier(0, n, 0)?;
            let start = Instant::now();
            for e in 1..=iters as u32 {
                root.barrier(0, n, e)?;
            }
            let t = start.elapsed();
            for c in children {
                c.join().map_err(|_| "a barrier node panicked")??;
            }
            Ok(t)
        })?;
        samples.push(t.as_secs_f64() * 1e6 / iters as f64);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}
