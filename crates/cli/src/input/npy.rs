//! A `.npy` logits file (NumPy's array format, versions 1 to 3).
//!
//! Layout: the magic `\x93NUMPY`, a major and a minor version byte, the header length
//! (little-endian `u16` in version 1, `u32` in versions 2 and 3), then the header: a Python
//! dict literal such as `{'descr': '<f4', 'fortran_order': False, 'shape': (32000,), }`, padded
//! with spaces and a newline. The data follows.
//!
//! Accepted: little-endian float32 (`<f4`) or float64 (`<f8`, converted to float32), of shape
//! `(N,)`, `(1, N)` or `(N, 1)` (one vector; the memory order is then irrelevant).

use anyhow::{bail, ensure, Result};

/// The first six bytes of every `.npy` file.
const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses the bytes of a `.npy` file.
///
/// # Errors
/// A bad magic or version, a malformed header, a dtype other than little-endian float32 or
/// float64, a shape holding more than one vector, or data of the wrong length.
pub(super) fn parse(bytes: &[u8]) -> Result<Vec<f32>> {
    ensure!(
        bytes.starts_with(MAGIC),
        "not a .npy file (it does not start with \\x93NUMPY)"
    );
    ensure!(bytes.len() >= 10, "truncated .npy header");
    let (len_size, major) = match bytes[6] {
        1 => (2, 1),
        v @ (2 | 3) => (4, v),
        v => bail!(
            ".npy version {v}.{} is not supported (expected 1, 2 or 3)",
            bytes[7]
        ),
    };
    let start = 8 + len_size;
    ensure!(bytes.len() >= start, "truncated .npy header");
    let mut len = [0u8; 4];
    len[..len_size].copy_from_slice(&bytes[8..start]);
    let header_len = u32::from_le_bytes(len) as usize;
    let Some(header) = bytes.get(start..start + header_len) else {
        bail!("truncated .npy header ({header_len} bytes announced)");
    };
    let header = if major == 3 {
        String::from_utf8_lossy(header).into_owned()
    } else {
        header.iter().map(|&b| b as char).collect() // latin-1
    };
    let header = Header::parse(&header)?;
    decode(&header, &bytes[start + header_len..])
}

/// The fields of an `.npy` header that matter here.
#[derive(Debug, PartialEq)]
struct Header {
    descr: String,
    shape: Vec<usize>,
}

impl Header {
    /// Reads `descr` and `shape` out of the dict literal (`fortran_order` is irrelevant for a
    /// single vector and is only checked to be a boolean).
    fn parse(text: &str) -> Result<Header> {
        let mut parser = Literal {
            text: text.trim_end(),
            pos: 0,
        };
        let Py::Dict(entries) = parser.value()? else {
            bail!(
                "malformed .npy header: expected a dict, found `{}`",
                text.trim()
            );
        };
        let field = |name: &str| entries.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        let descr = match field("descr") {
            Some(Py::Str(s)) => s.clone(),
            Some(_) => bail!("malformed .npy header: `descr` is not a string"),
            None => bail!("malformed .npy header: no `descr`"),
        };
        match field("fortran_order") {
            Some(Py::Bool(_)) | None => {}
            Some(_) => bail!("malformed .npy header: `fortran_order` is not a boolean"),
        }
        let shape = match field("shape") {
            Some(Py::Tuple(dims)) => dims
                .iter()
                .map(|d| match d {
                    Py::Int(n) => Ok(*n),
                    _ => bail!("malformed .npy header: `shape` holds a non-integer"),
                })
                .collect::<Result<Vec<usize>>>()?,
            Some(_) => bail!("malformed .npy header: `shape` is not a tuple"),
            None => bail!("malformed .npy header: no `shape`"),
        };
        Ok(Header { descr, shape })
    }
}

/// Checks dtype and shape and converts the data.
fn decode(header: &Header, data: &[u8]) -> Result<Vec<f32>> {
    let size = match header.descr.as_str() {
        "<f4" => 4,
        "<f8" => 8,
        d if d.starts_with('>') && d.len() > 1 && matches!(&d[1..], "f4" | "f8") => {
            bail!("big-endian data (`{d}`) is not supported; save with arr.astype('<f4')")
        }
        d => bail!("dtype `{d}` is not supported; expected float32 (`<f4`) or float64 (`<f8`)"),
    };
    let shape_text = shape_text(&header.shape);
    let n = match header.shape.as_slice() {
        [n] | [1, n] | [n, 1] => *n,
        _ => bail!("shape {shape_text} is not one vector; expected (N,) or (1, N)"),
    };
    let want = n.saturating_mul(size);
    ensure!(
        data.len() == want,
        "shape {shape_text} of `{}` needs {want} data bytes, found {}",
        header.descr,
        data.len()
    );
    Ok(if size == 4 {
        data.chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("chunk of 4")))
            .collect()
    } else {
        data.chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("chunk of 8")) as f32)
            .collect()
    })
}

/// The Python literals an `.npy` header uses.
#[derive(Debug, PartialEq)]
enum Py {
    Str(String),
    Int(usize),
    Bool(bool),
    Tuple(Vec<Py>),
    Dict(Vec<(String, Py)>),
}

/// A cursor over a Python literal.
struct Literal<'a> {
    text: &'a str,
    pos: usize,
}

impl Literal<'_> {
    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// Consumes `c` if it comes next (after spaces).
    fn eat(&mut self, c: char) -> bool {
        self.skip_space();
        if self.rest().starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: char) -> Result<()> {
        ensure!(
            self.eat(c),
            "malformed .npy header: expected `{c}` at byte {} of the header",
            self.pos
        );
        Ok(())
    }

    fn value(&mut self) -> Result<Py> {
        if self.eat('{') {
            let mut entries = Vec::new();
            while !self.eat('}') {
                let Py::Str(key) = self.value()? else {
                    bail!("malformed .npy header: a dict key is not a string");
                };
                self.expect(':')?;
                entries.push((key, self.value()?));
                if !self.eat(',') {
                    self.expect('}')?;
                    break;
                }
            }
            return Ok(Py::Dict(entries));
        }
        if self.eat('(') {
            let mut items = Vec::new();
            while !self.eat(')') {
                items.push(self.value()?);
                if !self.eat(',') {
                    self.expect(')')?;
                    break;
                }
            }
            return Ok(Py::Tuple(items));
        }
        let rest = self.rest();
        if let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') {
            let body = &rest[1..];
            let Some(end) = body.find(quote) else {
                bail!("malformed .npy header: unterminated string");
            };
            let text = body[..end].to_string();
            self.pos += end + 2;
            return Ok(Py::Str(text));
        }
        for (word, b) in [("True", true), ("False", false)] {
            if rest.starts_with(word) {
                self.pos += word.len();
                return Ok(Py::Bool(b));
            }
        }
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let Ok(n) = rest[..digits].parse::<usize>() else {
            let snippet: String = rest.chars().take(12).collect();
            bail!(
                "malformed .npy header: unexpected `{snippet}` at byte {} of the header",
                self.pos
            );
        };
        self.pos += digits;
        // Python 2 wrote long integers as `3L`.
        if self.rest().starts_with('L') {
            self.pos += 1;
        }
        Ok(Py::Int(n))
    }
}

/// A shape as Python prints a tuple: `()`, `(3,)`, `(1, 3)`.
fn shape_text(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `.npy` file as numpy writes it: header padded to a multiple of 64 bytes.
    fn npy(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let prefix = if version == 1 { 10 } else { 12 };
        let mut header = header.to_string();
        while !(prefix + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend([version, 0]);
        if version == 1 {
            out.extend((header.len() as u16).to_le_bytes());
        } else {
            out.extend((header.len() as u32).to_le_bytes());
        }
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    fn f32_bytes(xs: &[f32]) -> Vec<u8> {
        xs.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    fn err(bytes: &[u8]) -> String {
        parse(bytes).unwrap_err().to_string()
    }

    #[test]
    fn float32_one_and_two_dimensional() {
        let data = f32_bytes(&[1.0, -2.0, f32::NEG_INFINITY]);
        let file = npy(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
            &data,
        );
        assert_eq!(parse(&file).unwrap(), vec![1.0, -2.0, f32::NEG_INFINITY]);
        let file = npy(
            2,
            "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3), }",
            &data,
        );
        assert_eq!(parse(&file).unwrap(), vec![1.0, -2.0, f32::NEG_INFINITY]);
        let file = npy(3, "{\"shape\": (3, 1), \"descr\": \"<f4\"}", &data);
        assert_eq!(parse(&file).unwrap(), vec![1.0, -2.0, f32::NEG_INFINITY]);
    }

    #[test]
    fn float64_is_converted() {
        let data: Vec<u8> = [0.5f64, -1e-3]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let file = npy(
            1,
            "{'descr': '<f8', 'fortran_order': False, 'shape': (2L,), }",
            &data,
        );
        assert_eq!(parse(&file).unwrap(), vec![0.5, -1e-3]);
    }

    #[test]
    fn other_dtypes_and_shapes_are_rejected() {
        let data = f32_bytes(&[1.0, 2.0]);
        let e = err(&npy(
            1,
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
            &data,
        ));
        assert_eq!(
            e,
            "dtype `<i4` is not supported; expected float32 (`<f4`) or float64 (`<f8`)"
        );
        let e = err(&npy(
            1,
            "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
            &data,
        ));
        assert_eq!(
            e,
            "big-endian data (`>f4`) is not supported; save with arr.astype('<f4')"
        );
        let e = err(&npy(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
            &data,
        ));
        assert_eq!(e, "shape (2, 2) is not one vector; expected (N,) or (1, N)");
        let e = err(&npy(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (), }",
            &data,
        ));
        assert_eq!(e, "shape () is not one vector; expected (N,) or (1, N)");
        let e = err(&npy(
            1,
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }",
            &data,
        ));
        assert_eq!(e, "shape (3,) of `<f4` needs 12 data bytes, found 8");
    }

    #[test]
    fn malformed_files_are_rejected() {
        assert_eq!(
            err(b"PK\x03\x04"),
            "not a .npy file (it does not start with \\x93NUMPY)"
        );
        assert_eq!(
            err(b"\x93NUMPY\x04\x00\x10\x00"),
            ".npy version 4.0 is not supported (expected 1, 2 or 3)"
        );
        assert_eq!(
            err(b"\x93NUMPY\x01\x00\xff\x00{}"),
            "truncated .npy header (255 bytes announced)"
        );
        let e = err(&npy(1, "{'descr': '<f4', 'shape': [2]}", &[]));
        assert_eq!(
            e,
            "malformed .npy header: unexpected `[2]}` at byte 26 of the header"
        );
        let e = err(&npy(1, "{'shape': (2,)}", &[]));
        assert_eq!(e, "malformed .npy header: no `descr`");
        let e = err(&npy(1, "{'descr': '<f4', 'shape': (2,)", &[]));
        assert_eq!(
            e,
            "malformed .npy header: expected `}` at byte 30 of the header"
        );
    }
}
