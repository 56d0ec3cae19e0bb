//! `cargo run -- load URL`: a running server validated under load.

use std::process::ExitCode;

use super::{Done, Refusal};

/// `cargo run -- load URL` (or `--targets URL,URL,…`): the load, its table
/// and its verdict.
pub fn load(urls: Vec<String>, rate: u32, seconds: u32) -> Done {
    let load = kata_runner::load::Load::spread(&urls, rate, seconds).map_err(Refusal)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Refusal(format!("no runtime: {e}")))?;
    println!(
        "sending {} requests to {}, {rate} a second for {seconds} s ...",
        u64::from(rate) * u64::from(seconds),
        load.to()
    );
    let report = runtime.block_on(kata_runner::load::run(&load));
    print!("{}", report.render());
    Ok(if report.verdict().is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
