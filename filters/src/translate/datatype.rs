//! The tensor datatypes of the Open Inference Protocol and their wire sizes.

/// A tensor element type, as spelled in `datatype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// One byte, 0 or 1.
    Bool,
    /// Unsigned 8-bit integer.
    Uint8,
    /// Unsigned 16-bit integer.
    Uint16,
    /// Unsigned 32-bit integer.
    Uint32,
    /// Unsigned 64-bit integer.
    Uint64,
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// IEEE half precision; raw bytes only.
    Fp16,
    /// bfloat16; raw bytes only.
    Bf16,
    /// IEEE single precision.
    Fp32,
    /// IEEE double precision.
    Fp64,
    /// Variable-length byte strings (u32 little-endian length + bytes when raw).
    Bytes,
}

/// Every datatype, for tests and property generators.
pub const ALL: [DataType; 14] = [
    DataType::Bool,
    DataType::Uint8,
    DataType::Uint16,
    DataType::Uint32,
    DataType::Uint64,
    DataType::Int8,
    DataType::Int16,
    DataType::Int32,
    DataType::Int64,
    DataType::Fp16,
    DataType::Bf16,
    DataType::Fp32,
    DataType::Fp64,
    DataType::Bytes,
];

// === impl DataType ===

impl DataType {
    /// Parses the protocol's upper-case spelling.
    pub fn parse(text: &str) -> Option<Self> {
        ALL.into_iter().find(|d| d.as_str() == text)
    }

    /// The protocol's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DataType::Bool => "BOOL",
            DataType::Uint8 => "UINT8",
            DataType::Uint16 => "UINT16",
            DataType::Uint32 => "UINT32",
            DataType::Uint64 => "UINT64",
            DataType::Int8 => "INT8",
            DataType::Int16 => "INT16",
            DataType::Int32 => "INT32",
            DataType::Int64 => "INT64",
            DataType::Fp16 => "FP16",
            DataType::Bf16 => "BF16",
            DataType::Fp32 => "FP32",
            DataType::Fp64 => "FP64",
            DataType::Bytes => "BYTES",
        }
    }

    /// Bytes per element in raw form; `None` for BYTES (variable).
    pub fn size(self) -> Option<usize> {
        Some(match self {
            DataType::Bool | DataType::Uint8 | DataType::Int8 => 1,
            DataType::Uint16 | DataType::Int16 | DataType::Fp16 | DataType::Bf16 => 2,
            DataType::Uint32 | DataType::Int32 | DataType::Fp32 => 4,
            DataType::Uint64 | DataType::Int64 | DataType::Fp64 => 8,
            DataType::Bytes => return None,
        })
    }

    /// Whether the type is a signed or unsigned integer.
    pub(crate) fn is_integer(self) -> bool {
        matches!(
            self,
            DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::Uint8
                | DataType::Uint16
                | DataType::Uint32
                | DataType::Uint64
        )
    }

    /// Whether the type has a JSON `data` / typed `contents` form (FP16 and BF16 do not).
    pub fn has_typed_form(self) -> bool {
        !matches!(self, DataType::Fp16 | DataType::Bf16)
    }
}
