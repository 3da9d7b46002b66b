//! safeput.rs: Rust bindings for cabi/safeput.h, written by hand from the header alone (no
//! crates, no bindgen), and a small safe wrapper a Vortex integration can copy as it is.
//!
//! The tests compile it with Debian's rustc (1.63 and later) together with main.rs, the
//! reference caller, and run it against every test server (cabi/rust_test.go).
//!
//! What the wrapper promises, and why:
//! - `Writer` moves between threads (`Send`) but cannot be shared (`!Sync`): the header
//!   serialises calls on one handle, so one owner writes, and nothing is gained by sharing.
//! - `AbortToken` is `Clone + Send + Sync`: safeput_abort may be called from any thread at any
//!   time, also while a write on the handle blocks; a cancellation path keeps a token.
//! - A non-zero status becomes `Error`, an enum by status whose `Failure` carries the JSON's
//!   kind, exit code, S3 code, HTTP status and upload id: match on the variant, log the rest.
//! - `finish` consumes the writer and returns the parsed `Landed`; a writer dropped without
//!   `finish` aborts, so an error path or a panic never commits a half-written file. The drop
//!   blocks at most the handle's abort bound (2 x "abort_timeout", see safeput.h).
#![allow(dead_code)] // a library to copy: not every caller uses every part

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::os::raw::{c_char, c_int, c_void};

/// The raw functions of safeput.h.
pub mod sys {
    use super::*;

    pub const SAFEPUT_OK: c_int = 0;
    pub const SAFEPUT_INTERNAL: c_int = 1;
    pub const SAFEPUT_BAD_INPUT: c_int = 2;
    pub const SAFEPUT_TRANSIENT: c_int = 3;
    pub const SAFEPUT_PERMANENT: c_int = 4;
    pub const SAFEPUT_INTEGRITY: c_int = 5;
    pub const SAFEPUT_COMPATIBILITY: c_int = 6;
    pub const SAFEPUT_PRECONDITION: c_int = 7;
    pub const SAFEPUT_CANCELED: c_int = 8;
    pub const SAFEPUT_ABI_VERSION_MAJOR: u32 = 1;

    #[link(name = "safeput")]
    extern "C" {
        pub fn safeput_open(config_json: *const c_char, handle_out: *mut i64, json_out: *mut *mut c_char) -> c_int;
        pub fn safeput_open_len(
            config_json: *const c_char,
            config_len: usize,
            handle_out: *mut i64,
            json_out: *mut *mut c_char,
        ) -> c_int;
        pub fn safeput_write(handle: i64, buf: *const c_void, len: usize, json_out: *mut *mut c_char) -> c_int;
        pub fn safeput_close(handle: i64, json_out: *mut *mut c_char) -> c_int;
        pub fn safeput_abort(handle: i64, json_out: *mut *mut c_char) -> c_int;
        pub fn safeput_free(p: *mut c_char);
        pub fn safeput_version() -> *const c_char;
    }
}

/// take_json copies the library's string and releases it with safeput_free (never free()).
fn take_json(p: *mut c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    let s = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned();
    unsafe { sys::safeput_free(p) };
    s
}

/// The ABI version, e.g. "1.0.0".
pub fn version() -> String {
    let p = unsafe { sys::safeput_version() };
    if p.is_null() {
        return String::new();
    }
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// What a failure's JSON says.
#[derive(Debug, Clone, Default)]
pub struct Failure {
    /// The status, equal to the JSON's exit_code.
    pub exit_code: i32,
    /// "transient", "throttled", "integrity", "compatibility", "precondition", "permanent",
    /// "canceled" or "internal".
    pub kind: String,
    /// The S3 error code, when the store gave one.
    pub code: Option<String>,
    pub http_status: Option<u16>,
    pub upload_id: Option<String>,
    /// The upload could not be aborted: sweep the key.
    pub abort_failed: bool,
    /// An object of this write, not proven to be the bytes sent, is at the key.
    pub object_left: bool,
    pub message: String,
    /// The JSON as the library returned it.
    pub json: String,
}

/// A call's failure, by status (safeput.h's status codes; the CLI's exit codes).
#[derive(Debug, Clone)]
pub enum Error {
    /// 1: a bug in safeput (a recovered panic); report it.
    Internal(Failure),
    /// 2: bad config, a NULL pointer, an unknown or closed handle; nothing was sent.
    BadInput(Failure),
    /// 3: transient or throttled after retries: retry later.
    Transient(Failure),
    /// 4: credentials, permissions, missing bucket, a size broken: fix, do not retry.
    Permanent(Failure),
    /// 5: what landed differs from what was written.
    Integrity(Failure),
    /// 6: the store rejects the layout: change "provider".
    Compatibility(Failure),
    /// 7: create_only and the key exists.
    Precondition(Failure),
    /// 8: aborted (by this handle's AbortToken, perhaps from another thread).
    Canceled(Failure),
    /// A status this wrapper does not know (a newer library).
    Other(Failure),
}

impl Error {
    fn from_status(status: c_int, json: String) -> Error {
        let mut f = Failure { exit_code: status, json: json.clone(), ..Failure::default() };
        match parse_json(&json) {
            Ok(Json::Object(m)) => {
                f.kind = get_str(&m, "kind").unwrap_or_default();
                f.code = get_str(&m, "code");
                f.http_status = get_num(&m, "http_status").map(|n| n as u16);
                f.upload_id = get_str(&m, "upload_id");
                f.abort_failed = get_bool(&m, "abort_failed");
                f.object_left = get_bool(&m, "object_left");
                f.message = get_str(&m, "error").unwrap_or_default();
            }
            _ => f.message = format!("status {} with unreadable JSON {:?}", status, json),
        }
        match status {
            sys::SAFEPUT_INTERNAL => Error::Internal(f),
            sys::SAFEPUT_BAD_INPUT => Error::BadInput(f),
            sys::SAFEPUT_TRANSIENT => Error::Transient(f),
            sys::SAFEPUT_PERMANENT => Error::Permanent(f),
            sys::SAFEPUT_INTEGRITY => Error::Integrity(f),
            sys::SAFEPUT_COMPATIBILITY => Error::Compatibility(f),
            sys::SAFEPUT_PRECONDITION => Error::Precondition(f),
            sys::SAFEPUT_CANCELED => Error::Canceled(f),
            _ => Error::Other(f),
        }
    }

    pub fn failure(&self) -> &Failure {
        match self {
            Error::Internal(f)
            | Error::BadInput(f)
            | Error::Transient(f)
            | Error::Permanent(f)
            | Error::Integrity(f)
            | Error::Compatibility(f)
            | Error::Precondition(f)
            | Error::Canceled(f)
            | Error::Other(f) => f,
        }
    }

    /// The status code (the JSON's exit_code).
    pub fn code(&self) -> i32 {
        self.failure().exit_code
    }

    /// The failure's kind, e.g. "transient".
    pub fn kind(&self) -> &str {
        &self.failure().kind
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.failure();
        write!(f, "safeput: status {} ({}): {}", x.exit_code, x.kind, x.message)
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        let kind = match e {
            Error::Canceled(_) => io::ErrorKind::Interrupted,
            Error::BadInput(_) => io::ErrorKind::InvalidInput,
            _ => io::ErrorKind::Other,
        };
        io::Error::new(kind, e)
    }
}

/// The Result JSON of a landed object (safeput.h, safeput_close). Fields a newer library adds
/// are ignored.
#[derive(Debug, Clone, Default)]
pub struct Landed {
    pub bucket: String,
    pub key: String,
    pub size: u64,
    pub etag: String,
    pub version_id: Option<String>,
    pub checksum_algorithm: Option<String>,
    pub checksum: Option<String>,
    pub multipart: bool,
    /// 0 for a single PUT.
    pub parts: u64,
    /// 0 for a single PUT.
    pub part_size: u64,
    pub upload_id: Option<String>,
    pub bytes_sent: u64,
    pub requests: u64,
    /// Failed attempts by kind (retried).
    pub failures: BTreeMap<String, u64>,
    /// The evidence: "crc64nvme", "crc32c", ..., "etag-md5", "read-back", "length-only".
    pub verified: String,
    pub verified_strong: bool,
    pub already_existed: bool,
    /// A commit attempt may have landed unanswered: an already_existed object may be this write's.
    pub commit_answer_lost: bool,
    /// Uploads a lost create left that safeput could not abort: sweep them.
    pub left_behind: Vec<String>,
    pub maybe_left_behind: bool,
    pub notes: Vec<String>,
    pub upload_attempts: u64,
    pub elapsed_ms: u64,
    /// The JSON as the library returned it.
    pub json: String,
}

impl Landed {
    fn parse(json: String) -> Result<Landed, Error> {
        let m = match parse_json(&json) {
            Ok(Json::Object(m)) => m,
            _ => {
                return Err(Error::Internal(Failure {
                    exit_code: 1,
                    kind: "internal".to_string(),
                    message: format!("close returned 0 with unreadable JSON {:?}", json),
                    json,
                    ..Failure::default()
                }))
            }
        };
        let num = |k: &str| get_num(&m, k).unwrap_or(0.0) as u64;
        let strs = |k: &str| match m.get(k) {
            Some(Json::Array(a)) => a.iter().filter_map(|v| if let Json::Str(s) = v { Some(s.clone()) } else { None }).collect(),
            _ => Vec::new(),
        };
        let mut failures = BTreeMap::new();
        if let Some(Json::Object(f)) = m.get("failures") {
            for (k, v) in f {
                if let Json::Num(n) = v {
                    failures.insert(k.clone(), *n as u64);
                }
            }
        }
        Ok(Landed {
            bucket: get_str(&m, "bucket").unwrap_or_default(),
            key: get_str(&m, "key").unwrap_or_default(),
            size: num("size"),
            etag: get_str(&m, "etag").unwrap_or_default(),
            version_id: get_str(&m, "version_id"),
            checksum_algorithm: get_str(&m, "checksum_algorithm"),
            checksum: get_str(&m, "checksum"),
            multipart: get_bool(&m, "multipart"),
            parts: num("parts"),
            part_size: num("part_size"),
            upload_id: get_str(&m, "upload_id"),
            bytes_sent: num("bytes_sent"),
            requests: num("requests"),
            failures,
            verified: get_str(&m, "verified").unwrap_or_default(),
            verified_strong: get_bool(&m, "verified_strong"),
            already_existed: get_bool(&m, "already_existed"),
            commit_answer_lost: get_bool(&m, "commit_answer_lost"),
            left_behind: strs("left_behind"),
            maybe_left_behind: get_bool(&m, "maybe_left_behind"),
            notes: strs("notes"),
            upload_attempts: num("upload_attempts"),
            elapsed_ms: num("elapsed_ms"),
            json,
        })
    }
}

/// What an abort did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aborted {
    /// The write is discarded and nothing is left behind.
    Aborted,
    /// A close was running on another thread: it is cancelled and reports the outcome.
    Cancelling,
}

/// One object being written. Send, not Sync: give it to one thread (or task) at a time.
pub struct Writer {
    handle: i64,
    ended: bool,
    // Cell<()> is Send but not Sync, so Writer is too.
    _not_sync: PhantomData<Cell<()>>,
}

impl Writer {
    /// Opens a writer; nothing is sent yet. The config is safeput.h's JSON object, passed with
    /// its length (safeput_open_len): no NUL, no copy into a CString.
    pub fn open(config_json: &str) -> Result<Writer, Error> {
        let mut handle: i64 = 0;
        let mut json: *mut c_char = std::ptr::null_mut();
        let st = unsafe { sys::safeput_open_len(config_json.as_ptr().cast(), config_json.len(), &mut handle, &mut json) };
        let text = take_json(json);
        if st != sys::SAFEPUT_OK {
            return Err(Error::from_status(st, text));
        }
        Ok(Writer { handle, ended: false, _not_sync: PhantomData })
    }

    /// A token that aborts this write from any thread, also while a write blocks.
    pub fn abort_token(&self) -> AbortToken {
        AbortToken { handle: self.handle }
    }

    /// The handle, for logs.
    pub fn handle(&self) -> i64 {
        self.handle
    }

    /// Hands buf to the writer, which copies it; Ok once every byte is accepted. A failure is
    /// sticky: finish reports it in full (and has aborted the upload).
    pub fn write_all(&mut self, buf: &[u8]) -> Result<(), Error> {
        let mut json: *mut c_char = std::ptr::null_mut();
        let st = unsafe { sys::safeput_write(self.handle, buf.as_ptr().cast(), buf.len(), &mut json) };
        let text = take_json(json);
        if st != sys::SAFEPUT_OK {
            return Err(Error::from_status(st, text));
        }
        Ok(())
    }

    /// Commits and verifies: Ok only when the object is at the key, verified. Call it after a
    /// failed write too: it returns the classified failure, the upload aborted.
    pub fn finish(mut self) -> Result<Landed, Error> {
        self.ended = true;
        let mut json: *mut c_char = std::ptr::null_mut();
        let st = unsafe { sys::safeput_close(self.handle, &mut json) };
        let text = take_json(json);
        if st != sys::SAFEPUT_OK {
            return Err(Error::from_status(st, text));
        }
        Landed::parse(text)
    }

    /// Discards the write (see AbortToken::abort).
    pub fn abort(mut self) -> Result<Aborted, Error> {
        self.ended = true;
        self.abort_token().abort()
    }
}

impl io::Write for Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len()) // every byte accepted, or an error
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(()) // nothing is durable before finish
    }
}

impl Drop for Writer {
    // A writer dropped without finish (an error path, a panic) must not commit: abort. Drop
    // cannot return the outcome (an abort that failed names the upload to sweep in its error,
    // and in the library's log when "log_level" is set): a caller who must know calls abort().
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.abort_token().abort();
        }
    }
}

/// Aborts one writer's write from any thread. Cloneable; calls after the first answer
/// Error::Canceled (the handle was aborted) or Error::BadInput (it was closed).
#[derive(Debug, Clone)]
pub struct AbortToken {
    handle: i64,
}

impl AbortToken {
    /// Discards the write: parts stop, the multipart upload is aborted, nothing is committed.
    /// Blocks at most about 2 x the handle's "abort_timeout" (safeput.h); when that runs out,
    /// the error has abort_failed and the upload id to sweep.
    pub fn abort(&self) -> Result<Aborted, Error> {
        let mut json: *mut c_char = std::ptr::null_mut();
        let st = unsafe { sys::safeput_abort(self.handle, &mut json) };
        let text = take_json(json);
        if st != sys::SAFEPUT_OK {
            return Err(Error::from_status(st, text));
        }
        if text.contains("\"cancelling\"") {
            Ok(Aborted::Cancelling)
        } else {
            Ok(Aborted::Aborted)
        }
    }
}

// A JSON reader for the library's answers: enough for objects of strings, numbers, booleans,
// arrays and objects, with the escapes Go's encoder writes. No crates.

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Array(Vec<Json>),
    Object(BTreeMap<String, Json>),
}

fn get_str(m: &BTreeMap<String, Json>, k: &str) -> Option<String> {
    match m.get(k) {
        Some(Json::Str(s)) => Some(s.clone()),
        _ => None,
    }
}

fn get_num(m: &BTreeMap<String, Json>, k: &str) -> Option<f64> {
    match m.get(k) {
        Some(Json::Num(n)) => Some(*n),
        _ => None,
    }
}

fn get_bool(m: &BTreeMap<String, Json>, k: &str) -> bool {
    matches!(m.get(k), Some(Json::Bool(true)))
}

/// Parses one JSON value (and nothing after it but spaces).
pub fn parse_json(s: &str) -> Result<Json, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let v = value(b, &mut i)?;
    skip_ws(b, &mut i);
    if i != b.len() {
        return Err(format!("trailing data at {}", i));
    }
    Ok(v)
}

fn skip_ws(b: &[u8], i: &mut usize) {
    while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\n' || b[*i] == b'\r' || b[*i] == b'\t') {
        *i += 1;
    }
}

fn value(b: &[u8], i: &mut usize) -> Result<Json, String> {
    skip_ws(b, i);
    match b.get(*i) {
        None => Err("unexpected end".to_string()),
        Some(b'{') => {
            *i += 1;
            let mut m = BTreeMap::new();
            skip_ws(b, i);
            if b.get(*i) == Some(&b'}') {
                *i += 1;
                return Ok(Json::Object(m));
            }
            loop {
                skip_ws(b, i);
                let k = string(b, i)?;
                skip_ws(b, i);
                if b.get(*i) != Some(&b':') {
                    return Err(format!("want ':' at {}", i));
                }
                *i += 1;
                let v = value(b, i)?;
                m.insert(k, v);
                skip_ws(b, i);
                match b.get(*i) {
                    Some(b',') => *i += 1,
                    Some(b'}') => {
                        *i += 1;
                        return Ok(Json::Object(m));
                    }
                    _ => return Err(format!("want ',' or '}}' at {}", i)),
                }
            }
        }
        Some(b'[') => {
            *i += 1;
            let mut a = Vec::new();
            skip_ws(b, i);
            if b.get(*i) == Some(&b']') {
                *i += 1;
                return Ok(Json::Array(a));
            }
            loop {
                a.push(value(b, i)?);
                skip_ws(b, i);
                match b.get(*i) {
                    Some(b',') => *i += 1,
                    Some(b']') => {
                        *i += 1;
                        return Ok(Json::Array(a));
                    }
                    _ => return Err(format!("want ',' or ']' at {}", i)),
                }
            }
        }
        Some(b'"') => string(b, i).map(Json::Str),
        Some(b't') if b[*i..].starts_with(b"true") => {
            *i += 4;
            Ok(Json::Bool(true))
        }
        Some(b'f') if b[*i..].starts_with(b"false") => {
            *i += 5;
            Ok(Json::Bool(false))
        }
        Some(b'n') if b[*i..].starts_with(b"null") => {
            *i += 4;
            Ok(Json::Null)
        }
        Some(_) => {
            let start = *i;
            while *i < b.len() && (b[*i] == b'-' || b[*i] == b'+' || b[*i] == b'.' || b[*i] == b'e' || b[*i] == b'E' || b[*i].is_ascii_digit()) {
                *i += 1;
            }
            let t = std::str::from_utf8(&b[start..*i]).map_err(|e| e.to_string())?;
            t.parse::<f64>().map(Json::Num).map_err(|_| format!("bad value at {}", start))
        }
    }
}

fn hex4(b: &[u8], i: usize) -> Result<u32, String> {
    let t = b.get(i..i + 4).ok_or("short \\u escape")?;
    let t = std::str::from_utf8(t).map_err(|e| e.to_string())?;
    u32::from_str_radix(t, 16).map_err(|e| e.to_string())
}

fn string(b: &[u8], i: &mut usize) -> Result<String, String> {
    if b.get(*i) != Some(&b'"') {
        return Err(format!("want '\"' at {}", i));
    }
    *i += 1;
    let mut out: Vec<u8> = Vec::new();
    while let Some(&c) = b.get(*i) {
        *i += 1;
        match c {
            b'"' => return String::from_utf8(out).map_err(|e| e.to_string()),
            b'\\' => {
                let e = *b.get(*i).ok_or("unexpected end in escape")?;
                *i += 1;
                match e {
                    b'"' | b'\\' | b'/' => out.push(e),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'u' => {
                        let mut cp = hex4(b, *i)?;
                        *i += 4;
                        if (0xD800..0xDC00).contains(&cp) && b.get(*i) == Some(&b'\\') && b.get(*i + 1) == Some(&b'u') {
                            let lo = hex4(b, *i + 2)?;
                            if (0xDC00..0xE000).contains(&lo) {
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                                *i += 6;
                            }
                        }
                        let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                    }
                    _ => return Err(format!("bad escape at {}", i)),
                }
            }
            _ => out.push(c),
        }
    }
    Err("unterminated string".to_string())
}
