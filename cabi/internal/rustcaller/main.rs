// The Rust reference caller of safeput.h, through the safe wrapper in safeput.rs, the way a
// Vortex writer would call it: a columnar file (many small page writes, then a footer) streamed
// through the shared library. Each scenario writes its observations to OUT, one line each
// ("case NAME ... ok" or "... FAIL"), and the bytes it wrote to OUT.data (OUT.data.N per
// thread), and exits 0 when every call answered what the header documents; the Go test
// (cabi/rust_test.go) then checks the store independently.
//
//   columnar OUT CONFIG PAGES SEED       stream a columnar file of PAGES pages and close
//   threads OUT PAGES SEED CONFIG...     one thread per CONFIG, the writer moved into it
//   abort OUT CONFIG                     abort with a cloned token while another thread writes
//   misuse OUT CONFIG_A CONFIG_B         what the wrapper turns misuse into (status 2, 8)
//   hung OUT CONFIG                      a store that never answers: the header's bounds
//   cycles OUT N CONFIG...               N open/write/close (every 10th dropped) cycles: RSS flat
mod safeput;

use safeput::{AbortToken, Aborted, Error, Writer};
use std::fs::File;
use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// Writer moves between threads; that is checked here at compile time.
fn assert_send<T: Send>() {}
#[allow(dead_code)]
fn assert_token<T: Send + Sync + Clone>() {}

struct Out {
    f: File,
    failures: u32,
}

impl Out {
    fn case(&mut self, name: &str, ok: bool, detail: &str) {
        let _ = writeln!(self.f, "case {} {} {}", name, detail, if ok { "ok" } else { "FAIL" });
        if !ok {
            self.failures += 1;
        }
    }
}

// xorshift64, as the C caller's fill.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

// Odd sizes, as a columnar writer's pages straddle part boundaries at every offset.
const ODD: [usize; 9] = [1, 7, 4093, 65537, 1_000_003, 3, 511, 2_097_143, 13];

/// columnar writes a columnar-shaped file through w: per page an 8-byte header (length,
/// column) and the page, as two writes; every 50th page one of the odd sizes above, else up
/// to 64 KiB; then the footer (every page's offset, the footer's length, a magic) in one
/// write. It returns the bytes written, or the first failure.
fn columnar(w: &mut Writer, pages: usize, seed: u64) -> Result<Vec<u8>, (Vec<u8>, Error)> {
    let mut rng = Rng::new(seed);
    let mut all: Vec<u8> = Vec::new();
    let mut offsets: Vec<u64> = Vec::with_capacity(pages);
    for p in 0..pages {
        let n = if p % 50 == 49 { ODD[(p / 50) % ODD.len()] } else { (rng.next() % 65536) as usize + 1 };
        let mut page = vec![0u8; n];
        for chunk in page.chunks_mut(8) {
            let x = rng.next().to_le_bytes();
            let k = chunk.len();
            chunk.copy_from_slice(&x[..k]);
        }
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&(n as u32).to_le_bytes());
        head[4..].copy_from_slice(&((p % 7) as u32).to_le_bytes());
        offsets.push(all.len() as u64);
        for part in [&head[..], &page[..]] {
            all.extend_from_slice(part);
            if let Err(e) = w.write_all(part) {
                return Err((all, e));
            }
        }
    }
    let mut footer: Vec<u8> = Vec::new();
    for o in &offsets {
        footer.extend_from_slice(&o.to_le_bytes());
    }
    let flen = footer.len() as u32;
    footer.extend_from_slice(&flen.to_le_bytes());
    footer.extend_from_slice(b"VTXF");
    all.extend_from_slice(&footer);
    if let Err(e) = w.write_all(&footer) {
        return Err((all, e));
    }
    Ok(all)
}

fn save(path: &str, data: &[u8]) {
    if let Ok(mut f) = File::create(path) {
        let _ = f.write_all(data);
    }
}

fn cmd_columnar(out: &mut Out, path: &str, args: &[String]) {
    let (config, pages, seed) = (&args[0], args[1].parse().unwrap_or(0), args[2].parse().unwrap_or(0));
    let mut w = match Writer::open(config) {
        Ok(w) => w,
        Err(e) => return out.case("open", false, &e.to_string()),
    };
    let data = match columnar(&mut w, pages, seed) {
        Ok(d) => d,
        Err((d, e)) => {
            save(&format!("{}.data", path), &d);
            out.case("write", false, &e.to_string());
            let _ = w.finish();
            return;
        }
    };
    save(&format!("{}.data", path), &data);
    match w.finish() {
        Ok(l) => {
            let ok = l.size == data.len() as u64 && l.bytes_sent >= l.size && l.verified_strong && !l.verified.is_empty();
            out.case("landed", ok, &format!("size={} multipart={} parts={} part_size={} verified={}", l.size, l.multipart, l.parts, l.part_size, l.verified));
            let _ = writeln!(out.f, "result {}", l.json);
        }
        Err(e) => out.case("landed", false, &e.to_string()),
    }
}

fn cmd_threads(out: &mut Out, path: &str, args: &[String]) {
    let pages: usize = args[0].parse().unwrap_or(0);
    let seed: u64 = args[1].parse().unwrap_or(0);
    assert_send::<Writer>();
    let mut joins = Vec::new();
    for (i, config) in args[2..].iter().enumerate() {
        // Opened here, written and finished on its own thread: the writer moves.
        let w = Writer::open(config);
        let file = format!("{}.data.{}", path, i);
        joins.push(std::thread::spawn(move || -> Result<String, String> {
            let mut w = w.map_err(|e| e.to_string())?;
            match columnar(&mut w, pages, seed + i as u64) {
                Ok(data) => {
                    save(&file, &data);
                    let l = w.finish().map_err(|e| e.to_string())?;
                    if l.size != data.len() as u64 {
                        return Err(format!("landed {} bytes, wrote {}", l.size, data.len()));
                    }
                    Ok(format!("size={} parts={}", l.size, l.parts))
                }
                Err((_, e)) => Err(e.to_string()),
            }
        }));
    }
    for (i, j) in joins.into_iter().enumerate() {
        match j.join() {
            Ok(Ok(d)) => out.case(&format!("thread-{}", i), true, &d),
            Ok(Err(e)) => out.case(&format!("thread-{}", i), false, &e),
            Err(_) => out.case(&format!("thread-{}", i), false, "panicked"),
        }
    }
}

fn is_canceled(r: &Result<(), Error>) -> bool {
    matches!(r, Err(Error::Canceled(f)) if f.exit_code == 8 && f.kind == "canceled")
}

fn cmd_abort(out: &mut Out, args: &[String]) {
    let w = match Writer::open(&args[0]) {
        Ok(w) => w,
        Err(e) => return out.case("open", false, &e.to_string()),
    };
    let token: AbortToken = w.abort_token();
    let other = token.clone();
    let written = Arc::new(AtomicU64::new(0));
    let progress = written.clone();
    let writer = std::thread::spawn(move || {
        let mut w = w;
        let buf = vec![7u8; 1 << 20];
        let mut last: Result<(), Error> = Ok(());
        for _ in 0..256 {
            last = w.write_all(&buf);
            if last.is_err() {
                break;
            }
            progress.fetch_add(buf.len() as u64, Ordering::SeqCst);
        }
        (last, w.finish().map(|_| ()))
    });
    // Two 5 MiB parts in: a multipart upload exists. Then abort from this thread.
    let t0 = Instant::now();
    while written.load(Ordering::SeqCst) < 12 << 20 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let a = other.abort();
    out.case("abort-while-writing", a.as_ref().map(|x| *x == Aborted::Aborted).unwrap_or(false), &format!("{:?}", a.map_err(|e| e.to_string())));
    match writer.join() {
        Ok((last, finish)) => {
            out.case("writer-got-canceled", is_canceled(&last), &format!("{:?}", last.map_err(|e| e.to_string())));
            out.case("finish-after-abort-canceled", is_canceled(&finish), &format!("{:?}", finish.map_err(|e| e.to_string())));
        }
        Err(_) => out.case("writer-thread", false, "panicked"),
    }
    let again = token.abort();
    out.case("token-again-canceled", matches!(again, Err(Error::Canceled(_))), &format!("{:?}", again.map_err(|e| e.code())));
}

fn expect_err(out: &mut Out, name: &str, r: Result<Writer, Error>, code: i32, mention: &str) {
    match r {
        Ok(w) => {
            drop(w);
            out.case(name, false, "opened");
        }
        Err(e) => {
            let f = e.failure();
            let ok = e.code() == code && !f.kind.is_empty() && f.message.contains(mention) && f.json.contains("\"kind\"");
            out.case(name, ok, &format!("status={} kind={} error={:?}", e.code(), e.kind(), f.message));
        }
    }
}

fn raw_open(bytes: &[u8]) -> (i32, String) {
    let mut h: i64 = 0;
    let mut json: *mut std::os::raw::c_char = std::ptr::null_mut();
    let st = unsafe { safeput::sys::safeput_open_len(bytes.as_ptr().cast(), bytes.len(), &mut h, &mut json) };
    let text = if json.is_null() {
        String::new()
    } else {
        let s = unsafe { std::ffi::CStr::from_ptr(json) }.to_string_lossy().into_owned();
        unsafe { safeput::sys::safeput_free(json) };
        s
    };
    if st == 0 {
        unsafe { safeput::sys::safeput_abort(h, std::ptr::null_mut()) };
    }
    (st, text)
}

fn cmd_misuse(out: &mut Out, args: &[String]) {
    let v = safeput::version();
    out.case("version", v.starts_with("1."), &v);
    expect_err(out, "open-not-json", Writer::open("not json"), 2, "config");
    expect_err(out, "open-upper-case-field", Writer::open(r#"{"bucket":"b","KEY":"k"}"#), 2, "KEY");
    expect_err(out, "open-duplicate-field", Writer::open(r#"{"bucket":"b","key":"k","key":"j"}"#), 2, "given twice");
    expect_err(out, "open-unpaired-surrogate", Writer::open(r#"{"bucket":"b","key":"k\ud800"}"#), 2, "UTF-8");
    expect_err(out, "open-unknown-field", Writer::open(r#"{"bucket":"b","key":"k","create_onyl":true}"#), 2, "create_onyl");
    expect_err(out, "open-bad-abort-timeout", Writer::open(r#"{"bucket":"b","key":"k","abort_timeout":"0s"}"#), 2, "abort_timeout");
    // A &str cannot hold a bad byte; the raw call can.
    let (st, json) = raw_open(b"{\"bucket\":\"b\",\"key\":\"k\xff\"}");
    out.case("open-key-not-utf8", st == 2 && json.contains("key: not valid UTF-8") && json.contains("\"kind\""), &format!("status={} {}", st, json));
    let (st, _) = raw_open(b"");
    out.case("open-empty", st == 2, &format!("status={}", st));
    let mut h: i64 = 5;
    let st = unsafe { safeput::sys::safeput_open_len(std::ptr::null(), 5, &mut h, std::ptr::null_mut()) };
    out.case("open-len-null", st == 2 && h == 0, &format!("status={} handle={}", st, h));
    for (name, handle) in [("write-handle-0", 0i64), ("write-handle-never-issued", i64::MAX)] {
        let st = unsafe { safeput::sys::safeput_write(handle, b"x".as_ptr().cast(), 1, std::ptr::null_mut()) };
        out.case(name, st == 2, &format!("status={}", st));
    }

    // A lands "abc"; the token then finds the handle closed (2).
    match Writer::open(&args[0]) {
        Ok(mut a) => {
            let token = a.abort_token();
            let w = a.write_all(b"ab").and_then(|_| a.write_all(b"")).and_then(|_| a.write_all(b"c"));
            out.case("write-a", w.is_ok(), "");
            let l = a.finish();
            out.case("finish-a", l.as_ref().map(|l| l.size == 3).unwrap_or(false), &format!("{:?}", l.map(|l| l.size).map_err(|e| e.to_string())));
            let t = token.abort();
            out.case("token-after-finish-bad-input", matches!(t, Err(Error::BadInput(_))), &format!("{:?}", t.map_err(|e| e.code())));
        }
        Err(e) => out.case("open-a", false, &e.to_string()),
    }
    // B is dropped mid-write, as on an error path: it aborts; the token then answers 8.
    match Writer::open(&args[1]) {
        Ok(mut b) => {
            let token = b.abort_token();
            let _ = b.write_all(b"abc");
            drop(b);
            let t = token.abort();
            out.case("drop-aborted", matches!(t, Err(Error::Canceled(_))), &format!("{:?}", t.map_err(|e| e.code())));
        }
        Err(e) => out.case("open-b", false, &e.to_string()),
    }
}

// A store that accepts connections and never answers, stall_timeout 1s, abort_timeout 1s.
fn cmd_hung(out: &mut Out, args: &[String]) {
    let part = vec![1u8; 5 << 20];
    // The write that needs the multipart upload waits for its create: about 3 x stall_timeout.
    match Writer::open(&args[0]) {
        Ok(mut w) => {
            let t0 = Instant::now();
            let r = w.write_all(&part);
            let took = t0.elapsed();
            out.case("first-part-at-once", r.is_ok() && took < Duration::from_millis(500), &format!("{:?}", took));
            let t0 = Instant::now();
            let r = w.write_all(b"x");
            let took = t0.elapsed();
            let ok = matches!(r, Err(Error::Transient(_))) && took < Duration::from_secs(5);
            out.case("create-wait-bounded", ok, &format!("{:?} {:?}", took, r.map_err(|e| e.code())));
            let t0 = Instant::now();
            let f = w.finish();
            let took = t0.elapsed();
            out.case("finish-bounded", matches!(f, Err(Error::Transient(_))) && took < Duration::from_secs(4), &format!("{:?}", took));
        }
        Err(e) => out.case("open", false, &e.to_string()),
    }
    // An abort from another thread ends that wait at once and returns within 2 x abort_timeout.
    match Writer::open(&args[0]) {
        Ok(mut w) => {
            let _ = w.write_all(&part);
            let token = w.abort_token();
            let writer = std::thread::spawn(move || {
                let r = w.write_all(b"x");
                let t = Instant::now();
                (r, t)
            });
            std::thread::sleep(Duration::from_millis(500));
            let t0 = Instant::now();
            let a = token.abort();
            let took = t0.elapsed();
            // The sweep for the lost create's upload cannot finish: a classified failure naming it.
            let classified = match &a {
                Ok(_) => true,
                Err(e) => !e.kind().is_empty() && e.failure().abort_failed,
            };
            out.case("abort-bounded", classified && took < Duration::from_secs(4), &format!("{:?} {:?}", took, a.map_err(|e| e.kind().to_string())));
            match writer.join() {
                Ok((r, _)) => out.case("waiting-write-canceled", is_canceled(&r), &format!("{:?}", r.map_err(|e| e.code()))),
                Err(_) => out.case("writer-thread", false, "panicked"),
            }
        }
        Err(e) => out.case("open", false, &e.to_string()),
    }
}

// The process's resident set, from /proc/self/statm (pages of 4 KiB).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map(|pages| pages * 4)
        .unwrap_or(0)
}

fn cmd_cycles(out: &mut Out, args: &[String]) {
    let n: usize = args[0].parse().unwrap_or(0);
    let configs = &args[1..];
    let data = vec![3u8; 64 << 10];
    let (mut warm, mut bad) = (0u64, 0u32);
    for i in 0..n {
        if i == n / 3 {
            warm = rss_kib();
        }
        let mut w = match Writer::open(&configs[i % configs.len()]) {
            Ok(w) => w,
            Err(_) => {
                bad += 1;
                continue;
            }
        };
        if w.write_all(&data[..data.len() - i % 1000]).is_err() {
            bad += 1;
        }
        if i % 10 == 9 {
            drop(w); // aborts
        } else if w.finish().is_err() {
            bad += 1;
        }
    }
    let end = rss_kib();
    out.case("cycles-all-landed", bad == 0, &format!("{} cycles, {} failed", n, bad));
    // Flat: what the last two thirds of the cycles added stays under 16 MiB.
    out.case("rss-flat", warm > 0 && end < warm + (16 << 10), &format!("rss {} KiB after {} cycles, {} KiB after {}", warm, n / 3, end, n));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: rust_caller columnar|threads|abort|misuse|hung|cycles OUT ARGS...");
        std::process::exit(2);
    }
    let (cmd, path, rest) = (args[1].as_str(), args[2].clone(), &args[3..]);
    let f = match File::create(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{}: {}", path, e);
            std::process::exit(2);
        }
    };
    let mut out = Out { f, failures: 0 };
    match (cmd, rest.len()) {
        ("columnar", 3) => cmd_columnar(&mut out, &path, rest),
        ("threads", n) if n >= 3 => cmd_threads(&mut out, &path, rest),
        ("abort", 1) => cmd_abort(&mut out, rest),
        ("misuse", 2) => cmd_misuse(&mut out, rest),
        ("hung", 1) => cmd_hung(&mut out, rest),
        ("cycles", n) if n >= 2 => cmd_cycles(&mut out, rest),
        _ => {
            eprintln!("rust_caller: bad arguments for {}", cmd);
            std::process::exit(2);
        }
    }
    std::process::exit(if out.failures == 0 { 0 } else { 1 });
}
