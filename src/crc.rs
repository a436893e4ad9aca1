//! Checksums: CRC32-C for v2 record batches (over attributes..end, spec
//! "Record Batch"), CRC32 (IEEE) for v0/v1 messages (over magic..end).

/// CRC32-C (Castagnoli), hardware accelerated where the CPU has it.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC32 (IEEE 802.3), as `java.util.zip.CRC32`.
#[inline]
pub fn crc32(data: &[u8]) -> u32 {
    crc32fast::hash(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_values_from_the_catalogue() {
        // The standard "123456789" check values (CRC RevEng catalogue).
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32c(b""), 0);
    }
}
