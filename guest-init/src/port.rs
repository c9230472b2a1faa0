//! The record channel: a named virtio-serial port, found by its name in
//! /sys/class/virtio-ports, written one JSON line per record.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use mmci_record::{Envelope, Record};

/// Finds the /dev node of the virtio-serial port called `name`.
pub fn find_port(sys_class: &Path, name: &str) -> io::Result<PathBuf> {
    for entry in std::fs::read_dir(sys_class)? {
        let entry = entry?;
        let port_name = std::fs::read_to_string(entry.path().join("name")).unwrap_or_default();
        if port_name.trim() == name {
            return Ok(Path::new("/dev").join(entry.file_name()));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("no virtio-serial port named {name}"),
    ))
}

/// Writes records to the host; shared by the threads of PID 1.
pub struct RecordPort {
    file: Mutex<File>,
}

impl RecordPort {
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().write(true).open(path)?;
        Ok(RecordPort {
            file: Mutex::new(file),
        })
    }

    /// Sends one record. A failure to send is reported on the console: there
    /// is no other channel left to report it on.
    pub fn send(&self, record: Record) {
        let line = Envelope::new(record).to_line();
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = file.write_all(line.as_bytes()) {
            eprintln!("mmci guest-init: cannot send record: {e}");
        }
    }
}
