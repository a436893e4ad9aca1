//! gzip codec (to be written).
use super::CodecError;

pub fn decompress(_payload: &[u8], _limit: usize, _out: &mut Vec<u8>) -> Result<(), CodecError> {
    Err(CodecError::Invalid { codec: "gzip", message: "not implemented yet".into() })
}

pub fn compress(_input: &[u8], _level: Option<i32>, _out: &mut Vec<u8>) -> Result<(), CodecError> {
    Err(CodecError::Invalid { codec: "gzip", message: "not implemented yet".into() })
}
