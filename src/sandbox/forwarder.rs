//! Inside a sandbox with a network allowlist: the forwarder from
//! `127.0.0.1:<port>` (where `HTTP_PROXY` and its kin point) to candor's
//! proxy socket outside. The network namespace has only `lo`, so this is
//! the command's one way out, and the proxy decides where it leads.
//! Blocking threads in the sandbox's init, bounded in number.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most connections forwarded at once.
const MAX_CONNECTIONS: usize = 256;

/// Starts forwarding what `listener` accepts to `socket`.
pub fn start(listener: TcpListener, socket: PathBuf) -> Result<(), String> {
    let open = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("forwarder".into())
        .spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
                    continue;
                }
                let Ok(upstream) = UnixStream::connect(&socket) else {
                    continue;
                };
                open.fetch_add(1, Ordering::Relaxed);
                let open = open.clone();
                let _ = std::thread::Builder::new().spawn(move || {
                    splice(stream, upstream);
                    open.fetch_sub(1, Ordering::Relaxed);
                });
            }
        })
        .map(|_| ())
        .map_err(|e| format!("the proxy forwarder: {e}"))
}

/// Copies both ways until both sides are done.
fn splice(tcp: TcpStream, unix: UnixStream) {
    let (Ok(tcp_back), Ok(unix_back)) = (tcp.try_clone(), unix.try_clone()) else {
        return;
    };
    let up = std::thread::Builder::new().spawn(move || {
        copy(&tcp, &unix);
        let _ = unix.shutdown(Shutdown::Write);
    });
    copy(&unix_back, &tcp_back);
    let _ = tcp_back.shutdown(Shutdown::Write);
    if let Ok(up) = up {
        let _ = up.join();
    }
}

fn copy(mut from: impl Read, mut to: impl Write) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}
