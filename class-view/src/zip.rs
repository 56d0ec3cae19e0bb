//! Reads the small files of a zip archive, as GitHub and GitLab deliver a
//! job's artifacts (`report-ada.zip`, `artifacts.zip`): the central
//! directory, entries stored or deflated, each checked against its CRC-32.
//! An archive comes from a learner's CI, so nothing in it is trusted: every
//! size and offset is checked, an entry past [`MAX_ENTRY`] is not inflated,
//! an entry is never inflated past the size it declares, and an archive
//! whose entries share their bytes (a zip bomb's trick: thousands of
//! entries, one deflated stream) is refused whole. How much a whole archive
//! and a whole class folder may inflate is the caller's to cap
//! ([`Entry::size`] says it before anything is inflated).

/// The most an entry may hold once inflated: a report is a few kilobytes.
pub const MAX_ENTRY: usize = 16 << 20;

/// One file of an archive, as its central directory describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its path in the archive, with `/`.
    pub name: String,
    method: u16,
    flags: u16,
    crc: u32,
    compressed: usize,
    size: usize,
    local_header: usize,
}

impl Entry {
    /// How many bytes it holds once inflated, as its archive declares: no
    /// more are ever inflated.
    pub fn size(&self) -> usize {
        self.size
    }
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

/// Every entry of an archive that is a file (not a folder). An error says
/// why the bytes are not an archive this reader takes.
pub fn entries(archive: &[u8]) -> Result<Vec<Entry>, String> {
    // The end of central directory record: 22 bytes and a comment of at most
    // 65,535, found by its signature from the end.
    let earliest = archive.len().saturating_sub(22 + 65_535);
    let end = (earliest..=archive.len().saturating_sub(22))
        .rev()
        .find(|&at| u32_at(archive, at) == Some(0x0605_4b50))
        .ok_or("not a zip archive (no end of central directory)")?;
    let count = usize::from(u16_at(archive, end + 10).ok_or("a truncated archive")?);
    let directory = u32_at(archive, end + 16).ok_or("a truncated archive")?;
    if count == 0xffff || directory == 0xffff_ffff {
        return Err("a ZIP64 archive, which this reader does not take: unzip it first".into());
    }
    let mut at = directory as usize;
    let mut found = Vec::with_capacity(count.min(4_096));
    for _ in 0..count {
        let bad = || format!("a central directory entry at byte {at} is cut short or damaged");
        if u32_at(archive, at) != Some(0x0201_4b50) {
            return Err(bad());
        }
        let field16 = |offset: usize| u16_at(archive, at + offset).ok_or_else(bad);
        let field32 = |offset: usize| u32_at(archive, at + offset).ok_or_else(bad);
        let flags = field16(8)?;
        let method = field16(10)?;
        let crc = field32(16)?;
        let compressed = field32(20)? as usize;
        let size = field32(24)? as usize;
        let name_len = usize::from(field16(28)?);
        let extra_len = usize::from(field16(30)?);
        let comment_len = usize::from(field16(32)?);
        let local_header = field32(42)? as usize;
        let name = archive.get(at + 46..at + 46 + name_len).ok_or_else(bad)?;
        let name = String::from_utf8_lossy(name).replace('\\', "/");
        if !name.ends_with('/') {
            found.push(Entry {
                name,
                method,
                flags,
                crc,
                compressed,
                size,
                local_header,
            });
        }
        at += 46 + name_len + extra_len + comment_len;
    }
    // Each entry's own bytes (its local header, name, extra field and data)
    // may belong to no other: a writer gives every entry its own, and a zip
    // bomb points many at one stream, each inflated again.
    let mut spans: Vec<(usize, usize, &str)> = found
        .iter()
        .map(|e| {
            let header = e.local_header;
            let names = u16_at(archive, header + 26)
                .zip(u16_at(archive, header + 28))
                .map_or(0, |(name, extra)| usize::from(name) + usize::from(extra));
            let end = header
                .saturating_add(30 + names)
                .saturating_add(e.compressed);
            (header, end, e.name.as_str())
        })
        .collect();
    spans.sort();
    if let Some(pair) = spans.windows(2).find(|pair| pair[1].0 < pair[0].1) {
        return Err(format!(
            "its entries {:?} and {:?} share their bytes, as a zip bomb's do (no CI writes \
             an artifact so): not read",
            pair[0].2, pair[1].2
        ));
    }
    Ok(found)
}

/// The bytes of one entry. An error says why they cannot be had: encrypted,
/// compressed otherwise than stored or deflated, larger than [`MAX_ENTRY`],
/// damaged.
pub fn read(archive: &[u8], entry: &Entry) -> Result<Vec<u8>, String> {
    if entry.flags & 1 != 0 {
        return Err(format!("{} is encrypted", entry.name));
    }
    if entry.size > MAX_ENTRY {
        return Err(format!(
            "{} holds {} bytes, more than a report ever does ({MAX_ENTRY})",
            entry.name, entry.size
        ));
    }
    let at = entry.local_header;
    let damaged = || format!("{} is cut short or damaged", entry.name);
    if u32_at(archive, at) != Some(0x0403_4b50) {
        return Err(damaged());
    }
    let name_len = usize::from(u16_at(archive, at + 26).ok_or_else(damaged)?);
    let extra_len = usize::from(u16_at(archive, at + 28).ok_or_else(damaged)?);
    let start = at + 30 + name_len + extra_len;
    let data = archive
        .get(start..start.checked_add(entry.compressed).ok_or_else(damaged)?)
        .ok_or_else(damaged)?;
    let bytes = match entry.method {
        0 => data.to_vec(),
        // Never more than it declares (and one byte to tell it lied).
        8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, entry.size + 1)
            .map_err(|_| damaged())?,
        other => {
            return Err(format!(
                "{} is compressed by method {other}; only stored and deflated entries are read",
                entry.name
            ))
        }
    };
    if bytes.len() != entry.size || crc32(&bytes) != entry.crc {
        return Err(damaged());
    }
    Ok(bytes)
}

/// CRC-32 (IEEE), as zip archives check their entries.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// An archive of `files` (name, bytes), the first stored and the others
/// deflated, with a data descriptor as streaming writers (GitHub's) leave
/// one: what the tests read back.
#[cfg(test)]
pub fn write(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut directory = Vec::new();
    for (i, (name, bytes)) in files.iter().enumerate() {
        let (method, data) = if i == 0 {
            (0u16, bytes.to_vec())
        } else {
            (8, miniz_oxide::deflate::compress_to_vec(bytes, 6))
        };
        let crc = crc32(bytes);
        let offset = out.len() as u32;
        // The local header leaves the sizes and CRC to the data descriptor.
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend(20u16.to_le_bytes());
        out.extend(8u16.to_le_bytes());
        out.extend(method.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend([0u8; 12]);
        out.extend((name.len() as u16).to_le_bytes());
        out.extend(0u16.to_le_bytes());
        out.extend(name.as_bytes());
        out.extend(&data);
        out.extend(0x0807_4b50u32.to_le_bytes());
        out.extend(crc.to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend((bytes.len() as u32).to_le_bytes());
        directory.extend(0x0201_4b50u32.to_le_bytes());
        directory.extend(20u16.to_le_bytes());
        directory.extend(20u16.to_le_bytes());
        directory.extend(8u16.to_le_bytes());
        directory.extend(method.to_le_bytes());
        directory.extend([0u8; 4]);
        directory.extend(crc.to_le_bytes());
        directory.extend((data.len() as u32).to_le_bytes());
        directory.extend((bytes.len() as u32).to_le_bytes());
        directory.extend((name.len() as u16).to_le_bytes());
        directory.extend([0u8; 12]);
        directory.extend(offset.to_le_bytes());
        directory.extend(name.as_bytes());
    }
    let start = out.len() as u32;
    out.extend(&directory);
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend((files.len() as u16).to_le_bytes());
    out.extend((files.len() as u16).to_le_bytes());
    out.extend((directory.len() as u32).to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

/// An archive of `copies` entries (`0.json`, `1.json`, …) of `bytes` each,
/// deflated once: each entry with its own copy of the stream, or, `shared`,
/// all pointing at one, which each would inflate again (a zip bomb). What
/// the tests refuse.
#[cfg(test)]
pub fn copies(copies: u16, bytes: &[u8], shared: bool) -> Vec<u8> {
    let data = miniz_oxide::deflate::compress_to_vec(bytes, 6);
    let crc = crc32(bytes);
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    // What a local header and the central directory both say of an entry:
    // deflated, no time, its CRC, its sizes and its name's length.
    let fields = |out: &mut Vec<u8>, name: &str| {
        out.extend(8u16.to_le_bytes());
        out.extend([0u8; 4]);
        out.extend(crc.to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend((bytes.len() as u32).to_le_bytes());
        out.extend((name.len() as u16).to_le_bytes());
    };
    for i in 0..if shared { 1 } else { copies } {
        let name = format!("{i}.json");
        offsets.push(out.len() as u32);
        out.extend(0x0403_4b50u32.to_le_bytes());
        out.extend([20, 0, 0, 0]); // version needed, flags
        fields(&mut out, &name);
        out.extend(0u16.to_le_bytes()); // no extra field
        out.extend(name.as_bytes());
        out.extend(&data);
    }
    let start = out.len() as u32;
    for i in 0..copies {
        let name = format!("{i}.json");
        out.extend(0x0201_4b50u32.to_le_bytes());
        out.extend([20, 0, 20, 0, 0, 0]); // made by, version needed, flags
        fields(&mut out, &name);
        out.extend([0u8; 12]); // extra, comment, disk, attributes
        out.extend(offsets[if shared { 0 } else { usize::from(i) }].to_le_bytes());
        out.extend(name.as_bytes());
    }
    let length = out.len() as u32 - start;
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend(copies.to_le_bytes());
    out.extend(copies.to_le_bytes());
    out.extend(length.to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_and_deflated_entries_read_back() {
        let report = br#"{"schema":"x"}"#.repeat(50);
        let archive = write(&[("a/notes.txt", b"hello"), ("report.json", &report)]);
        let found = entries(&archive).unwrap();
        let names: Vec<&str> = found.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a/notes.txt", "report.json"]);
        assert_eq!(read(&archive, &found[0]).unwrap(), b"hello");
        assert_eq!(read(&archive, &found[1]).unwrap(), report);
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
    }

    #[test]
    fn damaged_and_foreign_archives_are_refused_with_a_sentence() {
        assert!(entries(b"not a zip at all, not even close")
            .unwrap_err()
            .contains("not a zip archive"));
        let archive = write(&[("report.json", b"{}")]);
        // A byte of the data changed: the CRC no longer matches.
        let mut flipped = archive.clone();
        flipped[30 + "report.json".len()] ^= 1;
        let entry = &entries(&flipped).unwrap()[0];
        assert!(read(&flipped, entry).unwrap_err().contains("damaged"));
        // An entry that claims more than a report ever holds is not inflated.
        let mut big = entries(&archive).unwrap()[0].clone();
        big.size = MAX_ENTRY + 1;
        assert!(read(&archive, &big).unwrap_err().contains("more than"));
        // A directory cut short.
        let cut = &archive[..archive.len() - 30];
        assert!(entries(cut).is_err());
        // An entry that inflates to more than it declares is refused,
        // having inflated no more than it declared.
        let archive = write(&[("a.txt", b""), ("report.json", &[b'x'; 100_000])]);
        let mut small = entries(&archive).unwrap()[1].clone();
        small.size = 10;
        assert!(read(&archive, &small).unwrap_err().contains("damaged"));
        // An empty entry, deflated, reads back.
        let archive = write(&[("a.txt", b""), ("report.json", b"")]);
        assert_eq!(read(&archive, &entries(&archive).unwrap()[1]).unwrap(), b"");
    }

    #[test]
    fn entries_that_share_their_bytes_are_refused_whole() {
        // 40 entries of 16 MiB, one stream of 16 KB: 640 MiB from 16 KB.
        let zeros = vec![0u8; MAX_ENTRY];
        let archive = copies(40, &zeros, true);
        assert!(archive.len() < 20_000, "{}", archive.len());
        let why = entries(&archive).unwrap_err();
        assert!(
            why.contains(
                "its entries \"0.json\" and \"1.json\" share their bytes, as a zip bomb's do"
            ),
            "{why}"
        );
        // The same entries, each with bytes of its own, are an archive like
        // any other (what it may inflate to is the caller's to cap).
        let apart = copies(3, b"{}", false);
        let found = entries(&apart).unwrap();
        assert_eq!(found.len(), 3);
        assert_eq!(read(&apart, &found[2]).unwrap(), b"{}");
    }
}
