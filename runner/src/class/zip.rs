//! Reads the small files of a zip archive, as GitHub and GitLab deliver a
//! job's artifacts (`report-ada.zip`, `artifacts.zip`): the central
//! directory, entries stored or deflated, each checked against its CRC-32.
//! An archive comes from a learner's CI, so nothing in it is trusted: every
//! size and offset is checked, and an entry past [`MAX_ENTRY`] is not
//! inflated.

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
        8 => miniz_oxide::inflate::decompress_to_vec_with_limit(data, MAX_ENTRY)
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
    }
}
