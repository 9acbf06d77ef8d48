//! TLS against real servers: nginx over HTTPS (HTTP/1.1 and HTTP/2 by ALPN) and etcd 3.5.1
//! with client-certificate authentication for gRPC, with certificates made at test time by
//! the `openssl` command. Every wrong-certificate case is checked for the message it prints.

mod common;

use common::*;

fn run(args: &[&str]) -> (bool, String, String) {
    let out = bakeoff(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn https(addr: std::net::SocketAddr, path: &str) -> String {
    format!("https://{addr}{path}")
}

#[test]
fn https_http1_and_h2_by_alpn_against_nginx() {
    let tmp = TempDir::new("tls-certs");
    let certs = make_certs(tmp.path());
    let Some(nginx) = start_tls_nginx(&certs) else {
        return;
    };
    let ca = certs.ca.to_str().unwrap();
    for (url, h2) in [
        (https(nginx.h1, "/index.html"), false),
        (https(nginx.h2, "/index.html"), true),
    ] {
        let mut args = vec!["load", "--cacert", ca, "-n", "60", "-c", "3", &url];
        if h2 {
            args.push("--h2");
        }
        let v = bakeoff_json(&args);
        assert_eq!(u(&v, "successes"), 60, "{v}");
        let tls = v["tls"].as_str().unwrap_or_default();
        assert!(tls.starts_with("TLSv1."), "negotiated: {tls:?}");
        if h2 {
            assert!(tls.contains("ALPN h2"), "{tls}");
            assert!(v["target"].as_str().unwrap().contains("HTTP/2 (TLS)"));
        } else {
            assert!(tls.contains("ALPN http/1.1"), "{tls}");
        }
        // Handshakes happen at connect: three clients, no reconnects while measuring.
        assert_eq!(u(&v, "reconnects"), 0, "{v}");
    }
    let (ok, body, _) = run(&["call", "--cacert", ca, &https(nginx.h1, "/index.html")]);
    assert!(ok && body.contains(INDEX.trim()), "{body}");
    // --servername: the certificate is valid for `localhost`, verified as such.
    let (ok, _, err) = run(&[
        "call",
        "--cacert",
        ca,
        "--servername",
        "localhost",
        &https(nginx.h1, "/index.html"),
    ]);
    assert!(ok, "{err}");
    // -k accepts a certificate no root vouches for.
    let (ok, _, err) = run(&["call", "-k", &https(nginx.h1, "/index.html")]);
    assert!(ok, "{err}");
}

#[test]
fn wrong_certificates_and_schemes_say_what_is_wrong() {
    let tmp = TempDir::new("tls-certs");
    let certs = make_certs(tmp.path());
    let Some(nginx) = start_tls_nginx(&certs) else {
        return;
    };
    let ca = certs.ca.to_str().unwrap();
    let url = https(nginx.h1, "/index.html");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["call", &url],
            "is signed by an unknown CA; pass the CA with --cacert FILE",
        ),
        (
            vec![
                "call",
                "--cacert",
                ca,
                "--servername",
                "wrong.example",
                &url,
            ],
            "name mismatch: the server's certificate is not valid for `wrong.example`",
        ),
        (vec!["call", "--cacert", ca], "has expired"),
    ];
    let expired = https(nginx.expired, "/index.html");
    for (mut args, want) in cases {
        if args.len() == 3 {
            args.push(&expired);
        }
        let (ok, _, err) = run(&args);
        assert!(!ok, "{args:?} should fail");
        assert!(err.contains(want), "{args:?}: expected `{want}` in:\n{err}");
    }
    // A plaintext server on an https:// URL, and a TLS server on an http:// URL.
    let (ok, _, err) = run(&["call", "--cacert", ca, &https(nginx.plain, "/index.html")]);
    assert!(
        !ok && err.contains("did not answer in TLS; is it a plaintext server?"),
        "{err}"
    );
    let (ok, _, err) = run(&["call", &format!("http://{}/index.html", nginx.h1)]);
    assert!(
        !ok && err.contains("the server answered in TLS; use an https:// URL"),
        "{err}"
    );
    let (ok, _, err) = run(&["call", "--h2", &format!("http://{}/", nginx.h2)]);
    assert!(
        !ok && err.contains("answered in HTTP/1.1, not HTTP/2: it may be a TLS server"),
        "{err}"
    );
    // TLS flags on a plaintext URL are a mistake, not ignored.
    let (ok, _, err) = run(&["call", "--cacert", ca, &format!("http://{}/", nginx.plain)]);
    assert!(
        !ok && err.contains("is a plaintext URL; use https://"),
        "{err}"
    );
    // A server that closes its connections: each new connection is counted as a reconnect.
    let v = bakeoff_json(&[
        "load",
        "-n",
        "100",
        "-c",
        "1",
        &format!("http://{}/index.html", nginx.plain),
    ]);
    assert_eq!((u(&v, "successes"), u(&v, "reconnects")), (100, 9), "{v}");
    // A certificate file that is not there names the flag and the file.
    let (ok, _, err) = run(&["call", "--cacert", "/nonexistent/ca.pem", &url]);
    assert!(
        !ok && err.contains("--cacert `/nonexistent/ca.pem`: cannot read"),
        "{err}"
    );
}

/// Certificate and key mistakes are said in words, naming the flag and the file (issue 25,
/// item 20): a damaged PEM file, a key that is not the certificate's.
#[test]
fn certificate_file_mistakes_are_said_in_words() {
    let tmp = TempDir::new("tls-words");
    let certs = make_certs(tmp.path());
    let damaged = tmp.path().join("damaged.pem");
    std::fs::write(
        &damaged,
        "-----BEGIN CERTIFICATE-----\n!!! not base64 !!!\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let url = format!("https://127.0.0.1:{}/", free_port());
    let (ok, _, err) = run(&["call", "--cacert", damaged.to_str().unwrap(), &url]);
    assert!(!ok);
    assert!(
        err.contains(&format!("--cacert `{}`", damaged.display()))
            && err.contains("is not base64")
            && !err.contains("Base64Decode"),
        "{err}"
    );
    // The client certificate with the server's key.
    let (ok, _, err) = run(&[
        "call",
        "--cacert",
        certs.ca.to_str().unwrap(),
        "--cert",
        certs.client.to_str().unwrap(),
        "--key",
        certs.server_key.to_str().unwrap(),
        &url,
    ]);
    assert!(!ok);
    assert!(
        err.contains("--cert/--key: the key is not the certificate's")
            && !err.contains("KeyMismatch"),
        "{err}"
    );
}

/// etcd 3.5.1 serving gRPC over TLS and asking for a client certificate.
fn start_mtls_etcd(certs: &Certs, dir: &std::path::Path) -> Option<(Proc, String)> {
    let bin = etcd35_bin()?;
    for _attempt in 0..5 {
        let (pc, pp) = (free_port(), free_port());
        let client = format!("https://127.0.0.1:{pc}");
        let peer = format!("http://127.0.0.1:{pp}");
        let data = dir.join(format!("data-{pc}"));
        let log = dir.join(format!("etcd-{pc}.log"));
        let child = std::process::Command::new(&bin)
            .args(["--name", "t", "--data-dir"])
            .arg(&data)
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
            .arg("--cert-file")
            .arg(&certs.server)
            .arg("--key-file")
            .arg(&certs.server_key)
            .arg("--trusted-ca-file")
            .arg(&certs.ca)
            .arg("--client-cert-auth")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("etcd starts");
        let mut proc = Proc(child);
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(30) {
            if let Ok(Some(_)) = proc.0.try_wait() {
                break;
            }
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            if log_text.contains("serving client traffic securely")
                || log_text.contains("ready to serve client requests")
            {
                return Some((proc, client));
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    panic!("etcd with TLS did not start in 5 attempts");
}

#[test]
fn grpc_over_tls_with_a_client_certificate_against_etcd() {
    let tmp = TempDir::new("tls-etcd");
    let certs = make_certs(&tmp.path().join("certs"));
    let Some((_etcd, url)) = start_mtls_etcd(&certs, tmp.path()) else {
        return;
    };
    let proto = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/etcd/protos/rpc.proto"
    );
    let (ca, cert, key) = (
        certs.ca.to_str().unwrap(),
        certs.client.to_str().unwrap(),
        certs.client_key.to_str().unwrap(),
    );
    let base = ["--grpc", &url, "--proto", proto, "--cacert", ca];
    let with_cert = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        a.extend(["--cert", cert, "--key", key].iter().map(|s| s.to_string()));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // The server may be a moment from having a leader: the first put is retried briefly.
    let put = with_cert(&[
        "--call",
        "etcdserverpb.KV/Put",
        "-d",
        r#"{"key":"dGxz","value":"b2s="}"#,
    ]);
    let mut put_args: Vec<&str> = vec!["call"];
    put_args.extend(put.iter().map(String::as_str));
    let mut last = String::new();
    let ok = (0..50).any(|_| {
        let (ok, _, err) = run(&put_args);
        last = err;
        if !ok {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        ok
    });
    assert!(ok, "put over mTLS failed: {last}");
    let range = with_cert(&[
        "--call",
        "etcdserverpb.KV/Range",
        "-d",
        r#"{"key":"dGxz"}"#,
        "-n",
        "100",
        "-c",
        "2",
    ]);
    let mut load_args: Vec<&str> = vec!["load"];
    load_args.extend(range.iter().map(String::as_str));
    let v = bakeoff_json(&load_args);
    assert_eq!(u(&v, "successes"), 100, "{v}");
    assert!(v["tls"].as_str().unwrap().contains("ALPN h2"), "{v}");
    assert!(
        v["target"].as_str().unwrap().starts_with("gRPC https://"),
        "{v}"
    );
    // Without a client certificate the server refuses, and the message says what to pass.
    let mut no_cert: Vec<&str> = vec!["call"];
    no_cert.extend(base);
    no_cert.extend(["--call", "etcdserverpb.KV/Range", "-d", r#"{"key":"dGxz"}"#]);
    let (ok, _, err) = run(&no_cert);
    assert!(!ok, "a call without a client certificate should fail");
    assert!(
        err.contains("client certificate") && err.contains("--cert FILE --key FILE"),
        "{err}"
    );
}

/// TLS like curl (issue 25, item 20): the certificate of the usual one-liner (`openssl req
/// -x509 … -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1`, CA:TRUE) given as
/// `--cacert` is trusted as the server's own certificate — still only for the names it
/// carries. The server is `openssl s_server -www`.
#[test]
fn a_one_liner_certificate_is_trusted_as_curl_trusts_it() {
    let dir = TempDir::new("tls-one-liner");
    let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(made.success());
    let port = free_port();
    let server = Proc(
        std::process::Command::new("openssl")
            .args(["s_server", "-quiet", "-www", "-accept"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("-cert")
            .arg(&cert)
            .arg("-key")
            .arg(&key)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("https://127.0.0.1:{port}/");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "s_server never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let ca = cert.to_str().unwrap();
    let (ok, out, err) = run(&["call", "--cacert", ca, &url]);
    assert!(ok, "{err}");
    assert!(!err.contains("CaUsedAsEndEntity"), "{err}");
    assert!(out.contains("s_server") || out.contains("Ciphers"), "{out}");
    // The same certificate is not valid for another name.
    let (ok, _, err) = run(&["call", "--cacert", ca, "--servername", "example.org", &url]);
    assert!(!ok, "{err}");
    assert!(err.contains("example.org") || err.contains("name"), "{err}");
    drop(server);
}
