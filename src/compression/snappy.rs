//! snappy codec (to be written).
use super::CodecError;

pub fn decompress(_payload: &[u8], _limit: usize, _out: &mut Vec<u8>) -> Result<(), CodecError> {
    Err(CodecError::Invalid { codec: "snappy", message: "not implemented yet".into() })
}

pub fn compress(_input: &[u8], _xerial: bool, _out: &mut Vec<u8>) -> Result<(), CodecError> {
    Err(CodecError::Invalid { codec: "snappy", message: "not implemented yet".into() })
}
