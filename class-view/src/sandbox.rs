//! Where a learner's checkout runs: its lesson files are code the learner
//! wrote, compiled and run with the instructor's rights unless something
//! stops them. On Linux, bubblewrap (`bwrap`) makes a sandbox of namespaces
//! for each run, which sees:
//!
//! - the system's programs and libraries (`/usr`, a few files of `/etc`)
//!   and the Rust toolchain (rustup's toolchains, cargo's registry),
//!   read-only;
//! - the kata, a pristine copy of the instructor's (`target/class/kata`),
//!   read-only at `/kata`, with the learner's lesson files, copied out of
//!   their checkout, laid read-only over the stubs;
//! - its own scratch folder, writable: the build (`/kata/target`, a copy of
//!   a build of the pristine kata), the runner's memory (`/kata/.kata`),
//!   `/tmp`, a home and a cargo home;
//!
//! and nothing else: not the instructor's home, not the class folder, not
//! another learner's files. Its network is its own, with loopback only (lesson
//! 08's `redis-server` on 127.0.0.1 works; nothing outside is reached, not
//! even a server on the instructor's loopback). Its processes have no
//! capabilities, cannot make user namespaces (bubblewrap 0.8 and later; the
//! class view says when an older one cannot forbid them), reach no keyring
//! (a seccomp filter refuses `keyctl`, `add_key` and `request_key`, and
//! they start with an empty session keyring: namespaces do not separate
//! keyrings, and the instructor's tokens may be kept there), and end with it;
//! each process
//! is held to a memory limit (`RLIMIT_DATA`) and a file size, and the whole
//! run to a time limit.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kata_runner::state;

/// How long and how much a learner's run may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The whole run: building the learner's lessons and running them.
    pub time: Duration,
    /// Each process's data (its heap, its stacks, what it maps to write),
    /// in MiB.
    pub memory_mib: u64,
}

/// The largest file a run may write: a test binary is a few hundred MB.
pub const MAX_FILE: u64 = 2 << 30;

/// The most a run may print before it is stopped: a report is kilobytes.
pub const MAX_OUTPUT: usize = 64 << 20;

/// Where the kata is inside a sandbox.
pub const KATA: &str = "/kata";
/// Where the runner is inside a sandbox.
pub const RUNNER: &str = "/opt/kata-runner";
const CARGO_HOME: &str = "/opt/cargo-home";
const HOME: &str = "/home/learner";

/// A bubblewrap that was seen to make a sandbox here.
#[derive(Clone, Debug)]
pub struct Bubblewrap {
    program: PathBuf,
    /// Whether this bwrap can forbid user namespaces inside (0.8 and later).
    disable_userns: bool,
}

impl Bubblewrap {
    /// What the sandbox forbids beyond its folders and network, for the
    /// class view's line on how checkouts ran.
    pub fn forbids(&self) -> &'static str {
        if self.disable_userns {
            "no capabilities and no user namespaces of its own"
        } else {
            "no capabilities (this bubblewrap, older than 0.8, cannot forbid user namespaces \
             inside it)"
        }
    }
}

/// What one sandboxed run sees besides the system and the toolchain.
pub struct Layout<'a> {
    /// The pristine kata, read-only at [`KATA`].
    pub kata: &'a Path,
    /// The build folder, writable at `/kata/target`.
    pub target: &'a Path,
    /// The runner's memory (`.kata/`: hints shown, outcomes kept), writable
    /// at `/kata/.kata`.
    pub state: &'a Path,
    /// The run's own folder, for `/tmp`, a home and a cargo home (emptied
    /// before the run).
    pub scratch: &'a Path,
    /// Files laid read-only over the kata's: (the file, its path in the kata).
    pub files: Vec<(PathBuf, String)>,
    /// The runner, read-only at [`RUNNER`].
    pub runner: &'a Path,
}

/// How to install bubblewrap, for a message.
pub const INSTALL: &str = "Debian and Ubuntu: `sudo apt-get install bubblewrap`; \
     Fedora: `sudo dnf install bubblewrap`; Arch: `sudo pacman -S bubblewrap`";

/// The bwrap to use: `KATA_BWRAP`, else `bwrap` on the `PATH`.
fn program() -> PathBuf {
    std::env::var_os("KATA_BWRAP")
        .map(PathBuf::from)
        .unwrap_or_else(|| "bwrap".into())
}

/// A bubblewrap that works here, or a sentence saying why there is none.
pub fn probe(scratch: &Path) -> Result<Bubblewrap, String> {
    if !cfg!(target_os = "linux") {
        return Err(format!(
            "this system is not Linux, and the sandbox is Linux's bubblewrap ({})",
            std::env::consts::OS
        ));
    }
    let program = program();
    let mut why = String::new();
    for disable_userns in [true, false] {
        let bwrap = Bubblewrap {
            program: program.clone(),
            disable_userns,
        };
        let layout_dir = scratch.join("probe");
        let _ = std::fs::remove_dir_all(&layout_dir);
        let empty = layout_dir.join("empty");
        for dir in [
            &empty,
            &layout_dir.join("kata/target"),
            &layout_dir.join("kata").join(state::DIR),
        ] {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        }
        let layout = Layout {
            kata: &layout_dir.join("kata"),
            target: &empty,
            state: &empty,
            scratch: &layout_dir.join("run"),
            files: Vec::new(),
            runner: Path::new("/bin/sh"),
        };
        let mut command = bwrap.command(&layout, RUNNER, &["-c", "exit 0"])?;
        let out = command.stdin(Stdio::null()).output();
        let _ = std::fs::remove_dir_all(&layout_dir);
        match out {
            Ok(out) if out.status.success() => return Ok(bwrap),
            Ok(out) => {
                let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
                // bwrap before 0.8 knows no --disable-userns: try without.
                if disable_userns && said.contains("--disable-userns") {
                    continue;
                }
                why = format!(
                    "`{}` could not make a sandbox here: {said} (user namespaces may be \
                     turned off: on Debian `sysctl kernel.unprivileged_userns_clone=1`; in a \
                     container, run it with user namespaces allowed)",
                    program.display()
                );
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                why = format!(
                    "bubblewrap (`{}`) is not installed ({INSTALL})",
                    program.display()
                );
            }
            Err(e) => why = format!("`{}` could not start: {e}", program.display()),
        }
        break;
    }
    Err(why)
}

/// `CARGO_HOME` and `RUSTUP_HOME` as cargo and rustup find them.
fn toolchain_homes() -> (Option<PathBuf>, Option<PathBuf>) {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let pick = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(default)))
            .filter(|p| p.is_dir())
    };
    (pick("CARGO_HOME", ".cargo"), pick("RUSTUP_HOME", ".rustup"))
}

/// The settings a run keeps from the instructor's environment: those that
/// change what cargo builds or what the checks do, the same for every
/// learner (and for the build of the pristine kata, which theirs start from).
fn kept(name: &str) -> bool {
    const PREFIXES: [&str; 3] = ["CARGO_PROFILE_", "LOOM_", "PROPTEST_"];
    const NAMES: [&str; 10] = [
        "PATH",
        "RUSTUP_TOOLCHAIN",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_INCREMENTAL",
        "KATA_TIME_LIMIT_SECS",
        "KATA_RUN_LIMIT_SECS",
        "KATA_LOOM_SCHEDULES",
        "LANG",
        "LC_ALL",
    ];
    NAMES.contains(&name) || PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The environment inside a sandbox.
pub fn environment() -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(name, _)| name.to_str().is_some_and(kept))
        .collect();
    let (_, rustup) = toolchain_homes();
    let mut set = |name: &str, value: OsString| env.push((name.into(), value));
    set("HOME", HOME.into());
    set("TMPDIR", "/tmp".into());
    set("CARGO_HOME", CARGO_HOME.into());
    set("CARGO_TARGET_DIR", format!("{KATA}/target").into());
    set("CARGO_NET_OFFLINE", "true".into());
    set("CARGO_TERM_COLOR", "never".into());
    set("CARGO_CACHE_AUTO_CLEAN_FREQUENCY", "never".into());
    set("NO_COLOR", "1".into());
    set("CARGO", kata_runner::suite::cargo().into());
    if let Some(rustup) = rustup {
        set("RUSTUP_HOME", rustup.into());
    }
    if let Some(redis) = std::env::var_os("KATA_REDIS_SERVER") {
        set("KATA_REDIS_SERVER", redis);
    }
    env.sort();
    env
}

impl Bubblewrap {
    /// A command that runs `program args` in a sandbox laid out as `layout`
    /// says, with [`environment`]. An error is a sentence.
    pub fn command(
        &self,
        layout: &Layout,
        program: &str,
        args: &[&str],
    ) -> Result<Command, String> {
        let scratch = layout.scratch;
        let _ = std::fs::remove_dir_all(scratch);
        for dir in ["tmp", "home", "cargo-home"] {
            let dir = scratch.join(dir);
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        }
        let mut command = Command::new(&self.program);
        let filter = keyring_filter()?;
        let mut arg = |parts: &[&dyn AsRef<std::ffi::OsStr>]| {
            for part in parts {
                command.arg(part.as_ref());
            }
        };
        arg(&[&"--unshare-all", &"--unshare-user", &"--cap-drop", &"ALL"]);
        if self.disable_userns {
            arg(&[&"--disable-userns"]);
        }
        // No keyrings: namespaces do not separate them, and the instructor's
        // user keyring is open to every process of the user.
        #[cfg(target_os = "linux")]
        if let Some(fd) = &filter {
            use std::os::fd::AsRawFd;
            arg(&[&"--seccomp", &fd.as_raw_fd().to_string()]);
        }
        arg(&[
            &"--die-with-parent",
            &"--new-session",
            &"--hostname",
            &"kata-sandbox",
        ]);
        // /tmp first: whatever else lies under /tmp on this machine (the kata
        // may) is laid over it.
        arg(&[&"--bind", &scratch.join("tmp"), &"/tmp"]);
        arg(&[&"--ro-bind", &"/usr", &"/usr"]);
        for dir in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
            match std::fs::read_link(dir) {
                Ok(to) => arg(&[&"--symlink", &to, &dir]),
                Err(_) => arg(&[&"--ro-bind-try", &dir, &dir]),
            }
        }
        for file in [
            "/etc/alternatives",
            "/etc/ld.so.cache",
            "/etc/ld.so.conf",
            "/etc/ld.so.conf.d",
            "/etc/passwd",
            "/etc/group",
            "/etc/hosts",
            "/etc/nsswitch.conf",
            "/etc/localtime",
        ] {
            arg(&[&"--ro-bind-try", &file, &file]);
        }
        arg(&[
            &"--dev",
            &"/dev",
            &"--size",
            &"67108864",
            &"--tmpfs",
            &"/dev/shm",
        ]);
        arg(&[&"--remount-ro", &"/dev", &"--proc", &"/proc"]);
        // The toolchain: rustup's, cargo's programs, and the registry of
        // crates (the cargo home itself is the run's: cargo writes its
        // locks there).
        let (cargo_home, rustup) = toolchain_homes();
        if let Some(rustup) = &rustup {
            arg(&[&"--ro-bind", rustup, rustup]);
        }
        let cargo = kata_runner::suite::cargo();
        if let Some(dir) = cargo.parent().filter(|d| d.is_absolute()) {
            arg(&[&"--ro-bind", &dir, &dir]);
        }
        arg(&[&"--bind", &scratch.join("cargo-home"), &CARGO_HOME]);
        if let Some(home) = &cargo_home {
            arg(&[&"--ro-bind-try", &home.join("bin"), &home.join("bin")]);
            // Not its config.toml: it may hold a registry's token or a
            // proxy's password.
            for part in ["registry", "git"] {
                arg(&[
                    &"--ro-bind-try",
                    &home.join(part),
                    &format!("{CARGO_HOME}/{part}"),
                ]);
            }
        }
        if let Some(redis) = std::env::var_os("KATA_REDIS_SERVER").map(PathBuf::from) {
            if redis.is_absolute() {
                arg(&[&"--ro-bind-try", &redis, &redis]);
            }
        }
        arg(&[&"--bind", &scratch.join("home"), &HOME]);
        arg(&[&"--ro-bind", &layout.kata, &KATA]);
        arg(&[&"--bind", &layout.target, &format!("{KATA}/target")]);
        arg(&[&"--bind", &layout.state, &format!("{KATA}/{}", state::DIR)]);
        for (file, inside) in &layout.files {
            arg(&[&"--ro-bind", file, &format!("{KATA}/{inside}")]);
        }
        arg(&[&"--ro-bind", &layout.runner, &RUNNER]);
        // Nothing else is writable: not the sandbox's own root, not /dev.
        arg(&[&"--remount-ro", &"/", &"--chdir", &KATA, &"--", &program]);
        command.args(args);
        command.env_clear().envs(environment());
        #[cfg(target_os = "linux")]
        if let Some(fd) = filter {
            use std::os::fd::AsRawFd;
            use std::os::unix::process::CommandExt;
            let raw = fd.as_raw_fd();
            // SAFETY: fcntl is async-signal-safe; the closure owns the
            // filter's file, open until the command is dropped, and lets
            // bwrap (only) inherit it.
            unsafe {
                command.pre_exec(move || {
                    let _kept = &fd;
                    if libc::fcntl(raw, libc::F_SETFD, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        Ok(command)
    }
}

/// The seccomp filter bwrap gives the sandbox (`--seccomp`), in a file of
/// its own: `add_key`, `request_key` and `keyctl` fail with EPERM (no
/// process inside can read, link or make a key), and so does every system
/// call of another ABI (32-bit, x32), where those have other numbers.
/// `None` on a processor this filter is not written for.
#[cfg(target_os = "linux")]
fn keyring_filter() -> Result<Option<std::os::fd::OwnedFd>, String> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xc000_003e;
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xc000_00b7;
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    return Ok(None);
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        const LOAD_WORD: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
        const JUMP_EQUAL: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
        const JUMP_AT_LEAST: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
        const RETURN: u16 = 0x06; // BPF_RET | BPF_K
        const ALLOW: u32 = 0x7fff_0000;
        let refuse = 0x0005_0000 | libc::EPERM as u32; // SECCOMP_RET_ERRNO
        let keys = [libc::SYS_add_key, libc::SYS_request_key, libc::SYS_keyctl].map(|n| n as u32);
        // (code, jump if true, jump if false, k)
        let program: [(u16, u8, u8, u32); 10] = [
            (LOAD_WORD, 0, 0, 4), // seccomp_data.arch
            (JUMP_EQUAL, 1, 0, ARCH),
            (RETURN, 0, 0, refuse),
            (LOAD_WORD, 0, 0, 0),               // seccomp_data.nr
            (JUMP_AT_LEAST, 4, 0, 0x4000_0000), // x32's numbers
            (JUMP_EQUAL, 3, 0, keys[0]),
            (JUMP_EQUAL, 2, 0, keys[1]),
            (JUMP_EQUAL, 1, 0, keys[2]),
            (RETURN, 0, 0, ALLOW),
            (RETURN, 0, 0, refuse),
        ];
        let mut bytes = Vec::new();
        for (code, yes, no, k) in program {
            bytes.extend(code.to_ne_bytes());
            bytes.extend([yes, no]);
            bytes.extend(k.to_ne_bytes());
        }
        // SAFETY: memfd_create with a NUL-terminated name; the descriptor
        // it returns is ours alone.
        let fd = unsafe { libc::memfd_create(c"kata-seccomp".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(format!(
                "cannot make the sandbox's seccomp filter: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: fd is a new, open descriptor that nothing else owns.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        let mut file = std::fs::File::from(owned);
        file.write_all(&bytes)
            .and_then(|()| std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(0)))
            .map_err(|e| format!("cannot write the sandbox's seccomp filter: {e}"))?;
        Ok(Some(file.into()))
    }
}

#[cfg(not(target_os = "linux"))]
fn keyring_filter() -> Result<Option<std::convert::Infallible>, String> {
    Ok(None)
}

/// Gives the calling process a new, empty session keyring, so that what
/// it runs cannot read the keys of the instructor's session (a login's
/// tokens): namespaces do not separate keyrings. Where the kernel has no
/// keyrings (or forbids them), there is nothing to read either.
fn forget_session_keyring() {
    #[cfg(target_os = "linux")]
    // SAFETY: keyctl is a plain system call, async-signal-safe; a null
    // name asks for an anonymous keyring.
    unsafe {
        libc::syscall(
            libc::SYS_keyctl,
            libc::KEYCTL_JOIN_SESSION_KEYRING,
            std::ptr::null::<libc::c_char>(),
        );
    }
}

/// What a run printed and how it ended.
#[derive(Debug, Default)]
pub struct Ran {
    pub stdout: String,
    pub stderr: String,
    /// Why it was stopped, when it was: a sentence.
    pub stopped: Option<String>,
}

/// Runs `command` under `limits`: each process's data and file size held
/// by resource limits, the whole run by the time limit (then killed, with
/// everything it started), its output by [`MAX_OUTPUT`].
pub fn run(mut command: Command, limits: &Limits) -> Ran {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let data = limits.memory_mib.saturating_mul(1 << 20);
        // SAFETY: setrlimit is async-signal-safe, as code between fork and
        // exec must be; the closure only reads plain numbers.
        unsafe {
            command.pre_exec(move || {
                let limit = |resource, value: u64| {
                    let value = value as libc::rlim_t;
                    let limit = libc::rlimit {
                        rlim_cur: value,
                        rlim_max: value,
                    };
                    if libc::setrlimit(resource, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                };
                limit(libc::RLIMIT_DATA, data)?;
                limit(libc::RLIMIT_FSIZE, MAX_FILE)?;
                limit(libc::RLIMIT_CORE, 0)?;
                forget_session_keyring();
                Ok(())
            });
        }
        // Its own process group, so that a run past its time is stopped
        // whole.
        command.process_group(0);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = match kata::watchdog::spawn_tied(command) {
        Ok(child) => child,
        Err(e) => {
            return Ran {
                stopped: Some(format!("it could not start: {e}")),
                ..Ran::default()
            }
        }
    };
    let mut too_much = false;
    let seen = kata::watchdog::collect_until(child, limits.time, |out, err| {
        too_much = out.len() + err.len() > MAX_OUTPUT;
        too_much
    });
    let stopped = if seen.timed_out {
        Some(format!(
            "stopped after {} s, the time limit of a learner's run (--time-limit)",
            limits.time.as_secs()
        ))
    } else if too_much {
        Some(format!(
            "stopped: it printed more than {} MiB",
            MAX_OUTPUT >> 20
        ))
    } else {
        seen.signal
            .map(|s| format!("ended by signal {}", kata::watchdog::signal_name(s)))
    };
    Ran {
        stdout: seen.stdout,
        stderr: seen.stderr,
        stopped,
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
