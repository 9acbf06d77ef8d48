//! `bakeoff completions SHELL` and `bakeoff man` (issue 52): scripts a shell accepts and a
//! manual page groff renders, both naming every command a user can type.

mod common;

use std::process::Command;

use common::*;

/// The commands `bakeoff --help` lists.
fn commands() -> Vec<String> {
    let o = bakeoff(&["--help"]);
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let list = help
        .split("Commands:")
        .nth(1)
        .and_then(|b| b.split("\n\n").next())
        .expect("--help lists the commands")
        .to_string();
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn the_bash_completion_is_a_script_bash_takes_and_completes_every_command() {
    let o = bakeoff(&["completions", "bash"]);
    assert!(o.status.success());
    let dir = TempDir::new("completions");
    let script = dir.path().join("bakeoff.bash");
    std::fs::write(&script, &o.stdout).unwrap();
    // Sourced, it registers a completion for `bakeoff`; asked for `bakeoff <TAB>`, it offers
    // every command.
    let probe = format!(
        "source {}; complete -p bakeoff; COMP_WORDS=(bakeoff ''); COMP_CWORD=1; COMP_LINE='bakeoff '; \
         COMP_POINT=8; _bakeoff bakeoff '' bakeoff; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash").args(["-c", &probe]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("complete "), "{text}");
    let offered: Vec<&str> = text.lines().skip(1).collect();
    let commands = commands();
    assert!(commands.len() > 10, "{commands:?}");
    for c in &commands {
        assert!(
            offered.contains(&c.as_str()),
            "`{c}` not offered: {offered:?}"
        );
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = bakeoff(&["completions", shell]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && text.contains("bisect"),
            "{shell}: {text}"
        );
    }
    let o = bakeoff(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_manual_page_renders_and_names_every_command() {
    let o = bakeoff(&["man"]);
    assert!(o.status.success());
    let page = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        page.starts_with(".ie") || page.contains(".TH bakeoff 1"),
        "{page}"
    );
    let Some(groff) = ["/usr/bin/groff"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        assert!(
            std::env::var("CI").is_err(),
            "groff is missing (groff-base)"
        );
        eprintln!("skipped: no groff");
        return;
    };
    let mut child = Command::new(groff)
        .args(["-man", "-Tutf8", "-ww"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let warnings = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && warnings.is_empty(), "{warnings}");
    assert!(
        text.contains("Reproducible side-by-side bake-offs"),
        "{text}"
    );
    for c in commands() {
        assert!(
            text.contains(&format!("bakeoff-{c}")) || text.contains(&c),
            "{c}: {text}"
        );
    }
}

/// Issue 68 item 16: `man` with its standard output closed exits 1 and says so (it exited 0
/// having written nothing); to /dev/null it is obeyed.
#[test]
fn man_to_a_closed_stdout_is_a_failure_not_silence() {
    let bin = env!("CARGO_BIN_EXE_bakeoff");
    let closed = std::process::Command::new("sh")
        .args(["-c", &format!("'{bin}' man >&-")])
        .output()
        .unwrap();
    assert_eq!(closed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&closed.stderr).contains("standard output is closed"));
    let null = std::process::Command::new("sh")
        .args(["-c", &format!("'{bin}' man > /dev/null")])
        .output()
        .unwrap();
    assert_eq!(null.status.code(), Some(0), "{null:?}");
}
