//! The conformance vectors' schema (`tests/vectors/argv.json`) and its loader.
//!
//! The file is language-neutral JSON, described for other implementations in
//! `tests/vectors/README.md`:
//!
//! ```json
//! { "version": 1, "description": "...", "vectors": [
//!   { "name": "one_of_each_type", "description": "...", "hex": "01 f9ffffff ...", "mem_len": 65536,
//!     "expect": { "args": [ {"index":0,"offset":0,"type":"i32","value":-7}, ... ] } },
//!   { "name": "unknown_tag_0xff", "description": "...", "hex": "ff", "mem_len": 65536,
//!     "expect": { "error": {"code":-9,"name":"InvalidArgs","kind":"unknown_tag","index":0,"offset":0} } }
//! ] }
//! ```
//!
//! Argument objects are exactly those of `kargs decode --json`.

use kernel_args_testkit::model::{self, Value};
use serde::{Deserialize, Serialize};

/// The committed vector file's text.
pub const ARGV_JSON: &str = include_str!("../vectors/argv.json");

/// The path of the committed vector file.
pub const ARGV_JSON_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/vectors/argv.json");

/// The whole vector file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VectorFile {
    /// The schema's version; this crate reads version 1.
    pub version: u32,
    /// What the file is.
    pub description: String,
    /// The vectors, each with a unique name.
    pub vectors: Vec<Vector>,
}

/// One test case: an input and what a conforming parser must answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vector {
    /// A unique snake_case name.
    pub name: String,
    /// What the vector checks, and why the answer is what it is.
    pub description: String,
    /// The argv buffer as hex digits; whitespace (between records, by convention) is ignored.
    pub hex: String,
    /// The guest memory's length in bytes (0 to 4294967296).
    pub mem_len: u64,
    /// The answer.
    pub expect: Expect,
}

/// The answer a conforming parser gives: the arguments, or the first error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// Accepted, with these arguments in buffer order.
    Args(Vec<ExpectedArg>),
    /// Rejected with this error.
    Error(ExpectedError),
}

/// One argument: where its record starts, then its typed value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedArg {
    /// 0-based record index.
    pub index: usize,
    /// Byte offset of the record's tag byte.
    pub offset: usize,
    /// The typed value.
    #[serde(flatten)]
    pub value: ExpectedValue,
}

/// A typed value as JSON spells it; `type` names the wire type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ExpectedValue {
    /// `{"type":"i32","value":-7}`
    I32 {
        /// The value.
        value: i32,
    },
    /// `{"type":"i64","value":-7}`
    I64 {
        /// The value.
        value: i64,
    },
    /// `{"type":"f32","bits":"0x3fc00000","value":"1.5"}`
    F32 {
        /// `0x` and 8 lowercase hex digits: the exact value.
        bits: String,
        /// The shortest decimal that reads back as the same float, or `NaN`, `inf`, `-inf`.
        value: String,
    },
    /// `{"type":"f64","bits":"0x3ff8000000000000","value":"1.5"}`
    F64 {
        /// `0x` and 16 lowercase hex digits: the exact value.
        bits: String,
        /// The shortest decimal that reads back as the same float, or `NaN`, `inf`, `-inf`.
        value: String,
    },
    /// `{"type":"u32","value":42}`
    U32 {
        /// The value.
        value: u32,
    },
    /// `{"type":"u64","value":42}`
    U64 {
        /// The value.
        value: u64,
    },
    /// `{"type":"ptr","guest_offset":64,"len":128}`
    Ptr {
        /// Start of the window in guest memory.
        guest_offset: u32,
        /// Length of the window in bytes.
        len: u32,
    },
}

/// The first error: ABI code and name, kind, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpectedError {
    /// The wasi-cuda ABI code (`-2`, `-9`, `-10`).
    pub code: i32,
    /// The code's name (`InvalidPointer`, `InvalidArgs`, `KernelArgsUnsupported`).
    pub name: String,
    /// The kind (`buffer_too_long`, `too_many_records`, `unknown_tag`, `truncated_record`,
    /// `window_out_of_bounds`).
    pub kind: String,
    /// The offending record's index (0 for `buffer_too_long`).
    pub index: usize,
    /// The byte offset at which the offending record starts (0 for `buffer_too_long`).
    pub offset: usize,
}

/// Why the vector file could not be used.
#[derive(Debug)]
pub enum LoadError {
    /// Not JSON of this schema.
    Json(serde_json::Error),
    /// A version this crate does not read.
    Version(u32),
    /// A vector whose hex is not hex.
    Hex {
        /// The vector's name.
        name: String,
    },
    /// Two vectors share a name.
    DuplicateName(String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Json(e) => write!(f, "vector file is not valid: {e}"),
            LoadError::Version(v) => write!(f, "vector file version {v} is not version 1"),
            LoadError::Hex { name } => write!(f, "vector {name}: hex is not an even number of hex digits"),
            LoadError::DuplicateName(name) => write!(f, "vector name {name} is used twice"),
        }
    }
}

impl std::error::Error for LoadError {}

/// Reads and checks a vector file: the schema, the version, every vector's hex, unique names.
pub fn load(text: &str) -> Result<VectorFile, LoadError> {
    let file: VectorFile = serde_json::from_str(text).map_err(LoadError::Json)?;
    if file.version != 1 {
        return Err(LoadError::Version(file.version));
    }
    let mut names = std::collections::BTreeSet::new();
    for v in &file.vectors {
        if v.bytes().is_none() {
            return Err(LoadError::Hex { name: v.name.clone() });
        }
        if !names.insert(v.name.as_str()) {
            return Err(LoadError::DuplicateName(v.name.clone()));
        }
    }
    Ok(file)
}

/// The committed vectors ([`ARGV_JSON`]).
pub fn argv_vectors() -> Result<VectorFile, LoadError> {
    load(ARGV_JSON)
}

impl Vector {
    /// The input's bytes, or `None` when `hex` is not an even number of hex digits.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        parse_hex(&self.hex)
    }

    /// The hex without whitespace.
    pub fn compact_hex(&self) -> String {
        self.hex.split_whitespace().collect()
    }
}

/// Hex digits (whitespace ignored) to bytes.
pub fn parse_hex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| c.to_digit(16).and_then(|d| u8::try_from(d).ok()))
        .collect::<Option<_>>()?;
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    Some(digits.chunks(2).map(|pair| pair[0] * 16 + pair[1]).collect())
}

/// Bytes to lowercase hex.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl ExpectedValue {
    /// The JSON form of a model value; float `value` strings are the shortest round-trip
    /// decimal (Rust's `{:?}`).
    pub fn from_value(value: &Value) -> ExpectedValue {
        match *value {
            Value::I32(value) => ExpectedValue::I32 { value },
            Value::I64(value) => ExpectedValue::I64 { value },
            Value::F32(bits) => ExpectedValue::F32 {
                bits: format!("{bits:#010x}"),
                value: format!("{:?}", f32::from_bits(bits)),
            },
            Value::F64(bits) => ExpectedValue::F64 {
                bits: format!("{bits:#018x}"),
                value: format!("{:?}", f64::from_bits(bits)),
            },
            Value::U32(value) => ExpectedValue::U32 { value },
            Value::U64(value) => ExpectedValue::U64 { value },
            Value::Ptr { guest_offset, len } => ExpectedValue::Ptr { guest_offset, len },
        }
    }
}

impl From<&model::Arg> for ExpectedArg {
    fn from(arg: &model::Arg) -> ExpectedArg {
        ExpectedArg { index: arg.index, offset: arg.offset, value: ExpectedValue::from_value(&arg.value) }
    }
}

impl From<&model::Rejection> for ExpectedError {
    fn from(r: &model::Rejection) -> ExpectedError {
        ExpectedError {
            code: r.failure.code(),
            name: r.failure.code_name().to_owned(),
            kind: r.failure.kind().to_owned(),
            index: r.index,
            offset: r.offset,
        }
    }
}

impl Expect {
    /// What the specification model answers for `bytes` in a memory of `mem_len` bytes.
    pub fn from_model(bytes: &[u8], mem_len: u64) -> Expect {
        match model::parse(bytes, mem_len) {
            Ok(args) => Expect::Args(args.iter().map(ExpectedArg::from).collect()),
            Err(rejection) => Expect::Error(ExpectedError::from(&rejection)),
        }
    }
}

/// The file's text as committed: two-space indentation, one vector field per line and one
/// argument per line, so that a diff shows exactly what changed.
pub fn to_pretty_json(file: &VectorFile) -> Result<String, serde_json::Error> {
    use serde_json::to_string as s;
    let mut out = String::new();
    out.push_str("{\n");
    out.push_str(&format!("  \"version\": {},\n", file.version));
    out.push_str(&format!("  \"description\": {},\n", s(&file.description)?));
    out.push_str("  \"vectors\": [\n");
    for (i, v) in file.vectors.iter().enumerate() {
        out.push_str("    {\n");
        out.push_str(&format!("      \"name\": {},\n", s(&v.name)?));
        out.push_str(&format!("      \"description\": {},\n", s(&v.description)?));
        out.push_str(&format!("      \"hex\": {},\n", s(&v.hex)?));
        out.push_str(&format!("      \"mem_len\": {},\n", v.mem_len));
        match &v.expect {
            Expect::Error(e) => out.push_str(&format!("      \"expect\": {{\"error\": {}}}\n", s(e)?)),
            Expect::Args(args) if args.is_empty() => out.push_str("      \"expect\": {\"args\": []}\n"),
            Expect::Args(args) => {
                out.push_str("      \"expect\": {\"args\": [\n");
                for (j, a) in args.iter().enumerate() {
                    let comma = if j + 1 < args.len() { "," } else { "" };
                    out.push_str(&format!("        {}{comma}\n", s(a)?));
                }
                out.push_str("      ]}\n");
            }
        }
        out.push_str(if i + 1 < file.vectors.len() { "    },\n" } else { "    }\n" });
    }
    out.push_str("  ]\n}\n");
    Ok(out)
}
