use super::*;

const KEY_ID: &str = "KATA_TEST_KEY_ID";

/// Run as a child of the tests below (with `KATA_TEST_KEY_ID` set to
/// key ids, comma-separated): links the user's keyring into its
/// session, then reads each key, and prints what it read or the error.
#[test]
fn reads_a_key_when_asked() {
    let Ok(ids) = std::env::var(KEY_ID) else {
        return;
    };
    // SAFETY: plain system calls on special keyring ids.
    let linked = unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            libc::KEYCTL_LINK,
            libc::KEY_SPEC_USER_KEYRING,
            libc::KEY_SPEC_SESSION_KEYRING,
        )
    };
    if linked < 0 {
        println!("LINK: refused ({})", std::io::Error::last_os_error());
    }
    for id in ids.split(',').filter_map(|v| v.parse::<i64>().ok()) {
        let mut buf = [0u8; 64];
        // SAFETY: the buffer outlives the call and its length is given.
        let n = unsafe {
            libc::syscall(
                libc::SYS_keyctl,
                libc::KEYCTL_READ,
                id,
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if n < 0 {
            println!("KEY: refused ({})", std::io::Error::last_os_error());
        } else {
            println!("KEY: {}", String::from_utf8_lossy(&buf[..n as usize]));
        }
    }
}

/// A key of `keyring` holding `secret`, or why the kernel made none.
fn key(keyring: i32, secret: &str) -> Result<i64, std::io::Error> {
    let name = std::ffi::CString::new(secret).unwrap();
    // SAFETY: the strings are NUL-terminated and outlive the call.
    let id = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            c"user".as_ptr(),
            name.as_ptr(),
            secret.as_ptr(),
            secret.len(),
            keyring,
        )
    };
    if id > 0 {
        Ok(id)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn revoke(id: i64) {
    // SAFETY: a plain system call on a key made by the test.
    unsafe { libc::syscall(libc::SYS_keyctl, libc::KEYCTL_REVOKE, id) };
}

/// The arguments that run this test binary again as a child that only
/// reads keys.
const READER: [&str; 5] = [
    "--exact",
    "sandbox::tests::reads_a_key_when_asked",
    "--nocapture",
    "--test-threads",
    "1",
];

/// In the sandbox no process can reach a keyring: not the instructor's
/// session's, not the user's (which every process of the user may
/// link into its own session), as bwrap's seccomp filter refuses the
/// keyring calls. The same child outside reads both keys.
#[test]
fn a_sandboxed_run_reaches_no_keyring_of_the_instructor_s() {
    let scratch = std::env::temp_dir().join(format!("kata-keyring-{}", std::process::id()));
    let bwrap = probe(&scratch)
        .unwrap_or_else(|why| panic!("this test needs bubblewrap making a sandbox here: {why}"));
    let secret = format!("kata-secret-{}", std::process::id());
    let (session, user) = match (
        key(libc::KEY_SPEC_SESSION_KEYRING, &format!("{secret}-s")),
        key(libc::KEY_SPEC_USER_KEYRING, &format!("{secret}-u")),
    ) {
        (Ok(s), Ok(u)) => (s, u),
        (s, u) => {
            // Where keyrings are refused (a container's own seccomp
            // profile), there is nothing a run could read either.
            eprintln!("no keyrings here, nothing to hide: {s:?} {u:?}");
            return;
        }
    };
    let kata = scratch.join("kata");
    let empty = scratch.join("empty");
    for dir in [&kata.join("target"), &kata.join(".kata"), &empty] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let layout = Layout {
        kata: &kata,
        target: &empty,
        state: &empty,
        scratch: &scratch.join("run"),
        files: Vec::new(),
        runner: &exe,
    };
    let mut inside = bwrap.command(&layout, RUNNER, &READER).unwrap();
    inside.env(KEY_ID, format!("{session},{user}"));
    let limits = Limits {
        time: Duration::from_secs(60),
        memory_mib: 1024,
    };
    let ran = run(inside, &limits);
    let mut outside = Command::new(&exe);
    outside
        .args(READER)
        .env(KEY_ID, format!("{session},{user}"));
    let plain = outside.output().unwrap();
    revoke(session);
    revoke(user);
    let _ = std::fs::remove_dir_all(&scratch);
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.contains(&format!("KEY: {secret}-s")), "{plain}");
    assert!(plain.contains(&format!("KEY: {secret}-u")), "{plain}");
    let inside = format!("{}{}", ran.stdout, ran.stderr);
    assert!(inside.contains("LINK: refused"), "{inside}");
    assert_eq!(inside.matches("KEY: refused").count(), 2, "{inside}");
    assert!(!inside.contains(&secret), "{inside}");
}

/// A run starts with an empty session keyring (the first of the
/// sandbox's two defences): the child cannot read the session's key;
/// the same child run plainly can.
#[test]
fn a_run_starts_with_an_empty_session_keyring() {
    let secret = format!("kata-secret-{}", std::process::id());
    let id = match key(libc::KEY_SPEC_SESSION_KEYRING, &secret) {
        Ok(id) => id,
        Err(e) => {
            eprintln!("no keyrings here, nothing to hide: {e}");
            return;
        }
    };
    let child = || {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command.args(READER).env(KEY_ID, id.to_string());
        command
    };
    let plain = child().output().unwrap();
    let limits = Limits {
        time: Duration::from_secs(60),
        memory_mib: 1024,
    };
    let ran = run(child(), &limits);
    revoke(id);
    let plain = String::from_utf8_lossy(&plain.stdout);
    assert!(plain.contains(&format!("KEY: {secret}")), "{plain}");
    assert!(
        ran.stdout.contains("KEY: refused"),
        "{}{}",
        ran.stdout,
        ran.stderr
    );
    assert!(!ran.stdout.contains(&secret), "{}", ran.stdout);
}
