//! The Copilot CLI's numbers: get_diagnostics round trip over the Unix socket against a bare
//! hyper server on a Unix socket answering the same bytes (the floor), both through the same
//! keep-alive client; and the resident memory the Copilot transport adds.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pi_ide_testkit::copilot::{locks, CopilotClient};
use pi_ide_testkit::nvim::{Nvim, Options};

const CALL_DEFAULT: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_diagnostics","arguments":{}}}"#;
static CALL_TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
fn call_text() -> &'static str { CALL_TEXT.get_or_init(|| std::env::var("PI_IDE_BENCH_CALL").unwrap_or_else(|_| CALL_DEFAULT.to_owned())) }

/// One keep-alive HTTP/1.1 connection, as the CLI's client keeps one.
struct KeepAlive {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    head: String,
}

impl KeepAlive {
    fn connect(socket: &Path, auth: &str, session: &str) -> KeepAlive {
        let s = UnixStream::connect(socket).unwrap();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: localhost\r\nauthorization: {auth}\r\nx-copilot-session-id: {session}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            call_text().len()
        );
        KeepAlive { reader: BufReader::new(s.try_clone().unwrap()), writer: s, head }
    }

    /// Sends the call; returns the body of the answer.
    fn call(&mut self) -> String {
        self.writer.write_all(format!("{}{}", self.head, call_text()).as_bytes()).unwrap();
        let mut len = 0;
        let mut line = String::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body).unwrap();
        String::from_utf8(body).unwrap()
    }
}

/// The floor: hyper's HTTP/1.1 server on a Unix socket (current-thread runtime, like ours)
/// answering every request with `answer`, in a process of its own as ours is (Neovim's): a
/// server thread in the client's own process would be spared the switch between processes.
/// Returns its socket and the process, to kill.
fn floor_process(answer: &str) -> (PathBuf, std::process::Child) {
    let path = std::env::temp_dir().join(format!("pi-ide-floor-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let answer_file = path.with_extension("answer");
    std::fs::write(&answer_file, answer).unwrap();
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--serve-floor")
        .arg(&path)
        .arg(&answer_file)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while UnixStream::connect(&path).is_err() {
        assert!(Instant::now() < deadline, "the floor server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    (path, child)
}

/// `--serve-floor SOCKET ANSWER_FILE`: runs the floor server until killed.
pub fn serve_floor(path: &Path, answer_file: &Path) {
    let answer = std::fs::read_to_string(answer_file).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    listener.set_nonblocking(true).unwrap();
    floor_server(listener, answer);
}

fn floor_server(listener: std::os::unix::net::UnixListener, answer: String) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::UnixListener::from_std(listener).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let answer = answer.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let answer = answer.clone();
                        async move {
                            use http_body_util::BodyExt;
                            let _ = req.into_body().collect().await;
                            let mut r = hyper::Response::new(Full::new(Bytes::from(answer)));
                            r.headers_mut().insert("content-type", hyper::header::HeaderValue::from_static("application/json"));
                            Ok::<_, std::convert::Infallible>(r)
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
                });
            }
        });
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn measure(c: &mut KeepAlive, n: usize, want: usize) -> (f64, f64) {
    let mut ms = Vec::with_capacity(n);
    for k in 0..(n + 100) {
        let t = Instant::now();
        let got = c.call();
        if k >= 100 {
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        assert_eq!(got.len(), want, "{got}");
    }
    ms.sort_by(f64::total_cmp);
    (percentile(&ms, 0.5), percentile(&ms, 0.99))
}

fn copilot_nvim() -> Nvim {
    let nvim = Nvim::start_with(Options {
        after: Some("require('pi-ide').setup({ copilot = true })".into()),
        ..Default::default()
    });
    nvim.wait_for("require('pi-ide').info().copilot_socket ~= nil", Duration::from_secs(30));
    nvim
}

/// Pins this process, and so the servers it starts, to one core: on two shared cores, whether
/// a server's thread wakes on the client's core or the other one changes a round trip by 2x,
/// which would decide the comparison instead of the work each server does.
fn pin_to_one_core() {
    // SAFETY: a zeroed cpu_set_t with one bit set, passed by pointer with its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn unpin() {
    // SAFETY: as in pin_to_one_core, with every core set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..libc::CPU_SETSIZE as usize {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// get_diagnostics over the socket, ours and the floor, interleaved in rounds: p50 and p99 (ms).
/// Both servers and the client run on one core (see [`pin_to_one_core`]).
pub fn roundtrip_vs_floor(n: usize) -> ((f64, f64), (f64, f64)) {
    pin_to_one_core();
    let nvim = copilot_nvim();
    let lock = locks(&nvim.home).remove(0);
    let mut client = CopilotClient::new(&lock, "bench");
    client.initialize();
    // The CLI holds its event stream open while it runs.
    let _events = client.events();
    let mut ours = KeepAlive::connect(&lock.socket(), &lock.authorization(), "bench");
    let answer = ours.call();
    let (floor_path, mut floor_child) = floor_process(&answer);
    let mut floor = KeepAlive::connect(&floor_path, "-", "-");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        a.push(measure(&mut ours, n, answer.len()));
        b.push(measure(&mut floor, n, answer.len()));
    }
    unpin();
    let _ = floor_child.kill();
    let _ = floor_child.wait();
    let _ = std::fs::remove_file(&floor_path);
    let _ = std::fs::remove_file(floor_path.with_extension("answer"));
    let med = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        x.sort_by(f64::total_cmp);
        x[x.len() / 2]
    };
    ((med(&a, |x| x.0), med(&a, |x| x.1)), (med(&b, |x| x.0), med(&b, |x| x.1)))
}

/// What copilot on with a session adds (KiB), median of 3.
pub fn copilot_adds(rss_kib: fn(u32) -> f64) -> f64 {
    let mut v: Vec<f64> = (0..3).map(|_| rss_copilot(rss_kib)).map(|(off, on)| on - off).collect();
    v.sort_by(f64::total_cmp);
    v[1]
}

/// Resident memory (KiB) of Neovim with the server up and one agent of each kind it serves
/// connected: copilot off (a Pi client) and copilot on (a Pi client and a Copilot session).
pub fn rss_copilot(rss_kib: fn(u32) -> f64) -> (f64, f64) {
    let off = Nvim::start();
    let _p = off.peer();
    let on = copilot_nvim();
    let _q = on.peer();
    let lock = locks(&on.home).remove(0);
    let mut c = CopilotClient::new(&lock, "rss");
    c.initialize();
    let _events = c.events();
    c.call("get_diagnostics", serde_json::json!({}));
    std::thread::sleep(Duration::from_millis(500));
    for n in [&off, &on] {
        n.lua("collectgarbage('collect')");
    }
    (rss_kib(off.pid()), rss_kib(on.pid()))
}
