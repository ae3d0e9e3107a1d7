//! Two processes passing values through an arena of two slots: the filler (this test binary
//! run again as a child) waits for free slots the reader frees, so every state change crosses
//! between the processes many times.
//!
//! `harness = false`: `main` runs the filler when the parent sets [`CHILD_DIR`], else the test
//! through `dsrt-atlas-test-runner`.
#![allow(clippy::unwrap_used)] // test code

use shared_slots::{Inbox, Ticket};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};

const CHILD_DIR: &str = "SHARED_SLOTS_TEST_CHILD_DIR";
const VALUES: u64 = 2000;
const BYTES: usize = 10_000;

fn value_byte(value: u64, at: usize) -> u8 {
    value.wrapping_mul(31).wrapping_add(at as u64).to_le_bytes()[0]
}

#[allow(clippy::print_stdout)]
fn filler(dir: &str) {
    let arena = shared_slots::Arena::create(std::path::Path::new(dir), 2, BYTES)
        .expect("an arena in the test's directory");
    let mut out = std::io::stdout().lock();
    for value in 0..VALUES {
        let mut slot = loop {
            match arena.try_fill() {
                Some(slot) => break slot,
                None => std::thread::yield_now(),
            }
        };
        let bytes = slot.bytes_mut();
        bytes[..8].copy_from_slice(&value.to_le_bytes());
        for (at, byte) in bytes[8..BYTES].iter_mut().enumerate() {
            *byte = value_byte(value, at);
        }
        let ticket = slot.send();
        writeln!(
            out,
            "TICKET {} {} {}",
            ticket.path.display(),
            ticket.slot,
            ticket.generation
        )
        .and_then(|()| out.flush())
        .expect("the reader reads the tickets");
    }
}

fn main() -> ExitCode {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        filler(&dir);
        return ExitCode::SUCCESS;
    }
    dsrt_atlas_test_runner::run(&[(
        "a_filler_process_and_a_reader_process_take_turns_with_two_slots",
        a_filler_process_and_a_reader_process_take_turns_with_two_slots,
    )])
}

fn a_filler_process_and_a_reader_process_take_turns_with_two_slots() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(CHILD_DIR, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut received = 0u64;
    let mut held = None;
    for line in lines {
        let line = line.unwrap();
        let Some(rest) = line.strip_prefix("TICKET ") else {
            continue;
        };
        let fields: Vec<&str> = rest.rsplitn(3, ' ').collect();
        let ticket = Ticket {
            path: fields[2].into(),
            slot: fields[1].parse().unwrap(),
            generation: fields[0].parse().unwrap(),
        };
        let slot = Inbox::receive(&ticket).unwrap();
        let bytes = slot.as_ref();
        let value = u64::from_le_bytes(bytes[..8].try_into().unwrap());
        assert_eq!(value, received, "values arrive in order");
        assert!(
            bytes[8..BYTES]
                .iter()
                .enumerate()
                .all(|(at, &b)| b == value_byte(value, at)),
            "value {value} arrived whole"
        );
        // A ticket is taken once.
        assert!(Inbox::receive(&ticket).is_err());
        // Keep every third value one turn longer: the filler then finds one slot held.
        held = if value % 3 == 0 { Some(slot) } else { None };
        received += 1;
    }
    drop(held);
    assert!(child.wait().unwrap().success());
    assert_eq!(received, VALUES);
    // The reader unlinked the arena when it mapped it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
